package observe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestNominatedBefore(t *testing.T) {
	live := plan.Remote{Workload: copyOnWorker(kueuetesting.MakeWorkload("trainjob-tj", ns))}
	cases := map[string]struct {
		nominated []string
		remotes   map[string]plan.Remote
		want      []string
	}{
		"the Workload's nomination": {
			nominated: []string{"a"},
			remotes:   map[string]plan.Remote{"a": live},
			want:      []string{"a"},
		},
		"a live copy the nomination does not name yet": {
			nominated: []string{"c"},
			remotes:   map[string]plan.Remote{"b": live, "c": {}},
			want:      []string{"b", "c"},
		},
		"a copy being deleted": {
			remotes: map[string]plan.Remote{"a": {Workload: copyOnWorker(kueuetesting.MakeWorkload("trainjob-tj", ns).Deleting(t0))}},
		},
		"a copy of an earlier Workload": {
			remotes: map[string]plan.Remote{"a": {Workload: copyOnWorker(kueuetesting.MakeWorkload("trainjob-tj", ns)), Stale: true}},
		},
		"a cluster without a copy": {
			remotes: map[string]plan.Remote{"a": {}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := &kueue.Workload{Status: kueue.WorkloadStatus{NominatedClusterNames: tc.nominated}}
			if diff := cmp.Diff(tc.want, nominatedBefore(wl, tc.remotes)); diff != "" {
				t.Errorf("nominatedBefore (-want +got):\n%s", diff)
			}
		})
	}
}

// copyOnWorker is Courier's copy of a manager Workload on a worker.
func copyOnWorker(w *kueuetesting.WorkloadWrapper) *kueue.Workload {
	return w.UID("copy-uid").Label(courier.OriginLabel, "courier").Annotation(courier.ManagerUIDAnnotation, "wl-uid").Obj()
}
