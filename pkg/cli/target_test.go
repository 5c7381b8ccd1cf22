package cli

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestParseTarget(t *testing.T) {
	cases := map[string]struct {
		arg          string
		wantResource string
		wantName     string
		wantErr      bool
	}{
		"a name is a TrainJob": {arg: "tj", wantResource: defaultResource, wantName: "tj"},
		"kind and name":        {arg: "trainjob/tj", wantResource: "trainjob", wantName: "tj"},
		"kind.group and name":  {arg: "job.batch/j", wantResource: "job.batch", wantName: "j"},
		"no name":              {arg: "trainjob/", wantErr: true},
		"no kind":              {arg: "/tj", wantErr: true},
		"too many slashes":     {arg: "job.batch/a/b", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, n, err := parseTarget(tc.arg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want one: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff([]string{tc.wantResource, tc.wantName}, []string{res, n}); diff != "" {
				t.Errorf("resource and name (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindCheck(t *testing.T) {
	checks := []kueue.AdmissionCheck{
		{ObjectMeta: metav1.ObjectMeta{Name: "courier"}, Spec: kueue.AdmissionCheckSpec{
			ControllerName: courier.ControllerName,
			Parameters:     &kueue.AdmissionCheckParametersReference{APIGroup: courier.GroupVersion.Group, Kind: "DispatchPolicy", Name: "all-workers"},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "provisioning"}, Spec: kueue.AdmissionCheckSpec{ControllerName: "kueue.x-k8s.io/provisioning-request"}},
	}
	cases := map[string]struct {
		wl   *kueue.Workload
		want *CheckStatus
	}{
		"Courier's check among others": {
			wl: kueuetesting.MakeWorkload("w", "ns").Check("provisioning", kueue.CheckStateReady, "").
				Check("courier", kueue.CheckStatePending, "Nominated w1 (best of 2).").Obj(),
			want: &CheckStatus{Name: "courier", State: "Pending", Message: "Nominated w1 (best of 2).", Policy: "all-workers"},
		},
		"no check of Courier's": {
			wl: kueuetesting.MakeWorkload("w", "ns").Check("provisioning", kueue.CheckStateReady, "").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := findCheck(tc.wl, checks)
			if diff := cmp.Diff(tc.want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".LastTransitionTime" }, cmp.Ignore())); diff != "" {
				t.Errorf("check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkloadState(t *testing.T) {
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		wl          *kueue.Workload
		wantState   string
		wantMessage string
	}{
		"new":      {wl: kueuetesting.MakeWorkload("w", "ns").Obj(), wantState: "Pending"},
		"waiting":  {wl: kueuetesting.MakeWorkload("w", "ns").Condition(kueue.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", at).Obj(), wantState: "Pending", wantMessage: "Pending"},
		"reserved": {wl: kueuetesting.MakeWorkload("w", "ns").ReserveQuota("cq").Obj(), wantState: "QuotaReserved", wantMessage: "QuotaReserved"},
		"admitted": {wl: kueuetesting.MakeWorkload("w", "ns").ReserveQuota("cq").Admit(at).Obj(), wantState: "Admitted", wantMessage: "Admitted"},
		"finished": {wl: kueuetesting.MakeWorkload("w", "ns").ReserveQuota("cq").Admit(at).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", at).Obj(), wantState: "Finished", wantMessage: "Succeeded"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state, msg := workloadState(tc.wl)
			if diff := cmp.Diff([]string{tc.wantState, tc.wantMessage}, []string{state, msg}); diff != "" {
				t.Errorf("state and message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkloadOf(t *testing.T) {
	job := &metav1.ObjectMeta{Name: "tj", UID: "job-uid"}
	old := kueuetesting.MakeWorkload("old", "ns").Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "job-uid").Obj()
	old.CreationTimestamp = metav1.NewTime(time.Unix(100, 0))
	newer := kueuetesting.MakeWorkload("new", "ns").Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "job-uid").Obj()
	newer.CreationTimestamp = metav1.NewTime(time.Unix(200, 0))
	other := kueuetesting.MakeWorkload("other", "ns").Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "another-uid").Obj()
	if got := workloadOf([]kueue.Workload{*old, *newer, *other}, job); got == nil || got.Name != "new" {
		t.Errorf("workloadOf = %v, want the newest Workload the job controls", got)
	}
	if got := workloadOf([]kueue.Workload{*other}, job); got != nil {
		t.Errorf("workloadOf = %s, want none: a Workload of a job of the same name and another UID", got.Name)
	}
}
