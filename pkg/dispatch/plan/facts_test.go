package plan

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

// TestCarriedOn checks that CarriedOn names a worker exactly when the plan
// forwards to the copy there: the observation computes the forwarding only
// then, and a plan that would forward where CarriedOn says "" would never
// be given one.
func TestCarriedOn(t *testing.T) {
	labelled := &adapter.Forwarding{Update: &unstructured.Unstructured{Object: map[string]any{"kind": "Job"}}, Forwarded: []string{"metadata.labels"}}
	onA := map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobMirrored: true, Forward: labelled}}
	placed := func() *kueuetesting.WorkloadWrapper { return local().ClusterName("a") }
	cases := map[string]struct {
		o    Observed
		want string
	}{
		"running on a": {
			o:    Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}},
			want: "a",
		},
		"running on a, placed before records": {
			o:    Observed{Workload: placed().Obj(), Check: readyCheck},
			want: "a",
		},
		"its job ended on the manager": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"},
				JobEnd: adapter.Outcome{Finished: true}},
		},
		"the Workload finished": {
			o: Observed{Workload: placed().Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}},
		},
		"evicted on the manager": {
			o: Observed{Workload: placed().Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, kueue.WorkloadEvictedByPreemption, t0).Obj(), Check: readyCheck,
				Placement: &workload.Placement{Cluster: "a"}},
		},
		"deactivated": {
			o: Observed{Workload: placed().Active(false).Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}},
		},
		"its job gone": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, JobMissing: true},
		},
		"its check in Retry": {
			o: Observed{Workload: placed().Obj(), Check: retryCheck, Placement: &workload.Placement{Cluster: "a"}},
		},
		"placed for an earlier admission": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1},
		},
		"not placed": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.o.Now, tc.o.Health, tc.o.Remotes = now, connected, onA
			tc.o.HasCheck, tc.o.KueueFinishGrace = true, grace
			got := CarriedOn(tc.o)
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CarriedOn() mismatch (-want +got):\n%s", diff)
			}
			if forwarded := decide(tc.o).Forward; forwarded != got {
				t.Errorf("decide() forwards to %q, CarriedOn() says %q", forwarded, got)
			}
		})
	}
}
