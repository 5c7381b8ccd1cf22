package benchstack

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestFloorAnswer(t *testing.T) {
	reserved := metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"}
	finished := metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded"}
	workload := func(state kueue.CheckState, conds ...metav1.Condition) *kueue.Workload {
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "wl", Namespace: "ns", ResourceVersion: "7"}}
		wl.Status.Conditions = conds
		wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: "other", State: kueue.CheckStatePending}}
		if state != "" {
			wl.Status.AdmissionChecks = append(wl.Status.AdmissionChecks, kueue.AdmissionCheckState{Name: floorCheck, State: state})
		}
		return wl
	}
	cases := map[string]struct {
		wl      *kueue.Workload
		state   kueue.CheckState
		wantSet bool
	}{
		"quota reserved and the check Pending: Ready, the other check left": {wl: workload(kueue.CheckStatePending, reserved), state: kueue.CheckStateReady, wantSet: true},
		"quota reserved and the check Pending: Rejected":                    {wl: workload(kueue.CheckStatePending, reserved), state: kueue.CheckStateRejected, wantSet: true},
		"no quota reserved yet":                                             {wl: workload(kueue.CheckStatePending), state: kueue.CheckStateReady},
		"the check Ready already":                                           {wl: workload(kueue.CheckStateReady, reserved), state: kueue.CheckStateReady},
		"the check Rejected already":                                        {wl: workload(kueue.CheckStateRejected, reserved), state: kueue.CheckStateRejected},
		"a Workload of another check":                                       {wl: workload("", reserved), state: kueue.CheckStateReady},
		"finished, its check reset to Pending":                              {wl: workload(kueue.CheckStatePending, reserved, finished), state: kueue.CheckStateReady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.wl.DeepCopy()
			got := floorAnswer(tc.wl, tc.state, "The bench's floor dispatches nowhere.")
			if diff := cmp.Diff(before, tc.wl); diff != "" {
				t.Errorf("floorAnswer changed its argument (-before +after):\n%s", diff)
			}
			if !tc.wantSet {
				if got != nil {
					t.Errorf("floorAnswer = %+v, want nil", got.Status.AdmissionChecks)
				}
				return
			}
			want := before.DeepCopy()
			want.Status.AdmissionChecks[1].State = tc.state
			want.Status.AdmissionChecks[1].Message = "The bench's floor dispatches nowhere."
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(kueue.AdmissionCheckState{}, "LastTransitionTime")); diff != "" {
				t.Errorf("floorAnswer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFloorComplete(t *testing.T) {
	job := func(suspend *bool, conds ...metav1.Condition) *trainer.TrainJob {
		j := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}}
		j.Spec.Suspend = suspend
		j.Status.Conditions = conds
		return j
	}
	failed := metav1.Condition{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue, Reason: "Failed"}
	deleting := job(ptr.To(false))
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	cases := map[string]struct {
		job          *trainer.TrainJob
		wantComplete bool
	}{
		"resumed by Kueue: Complete":                         {job: job(ptr.To(false)), wantComplete: true},
		"still suspended":                                    {job: job(ptr.To(true))},
		"not yet seen by Kueue's webhook, which suspends it": {job: job(nil)},
		"ended already":                                      {job: job(ptr.To(false), failed)},
		"being deleted":                                      {job: deleting},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := floorComplete(tc.job)
			if !tc.wantComplete {
				if got != nil {
					t.Errorf("floorComplete = %+v, want nil", got.Status.Conditions)
				}
				return
			}
			if got == nil || !isFinal(got) || isFinal(tc.job) {
				t.Errorf("floorComplete = %v, want a copy Complete, the job left as it was", got)
			}
		})
	}
}
