package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestWanted(t *testing.T) {
	// The Workload holds 4 GPUs of flavor a100.
	held := Amounts{{Flavor: "a100", Resource: "nvidia.com/gpu"}: 4000}
	gpus := func(name, nominal, reserved string, pending int32) *kueuetesting.ClusterQueueWrapper {
		return kueuetesting.MakeClusterQueue(name).Quota("a100", "nvidia.com/gpu", nominal).
			Reserved("a100", "nvidia.com/gpu", reserved).Pending(pending)
	}
	cases := map[string]struct {
		own    *kueue.ClusterQueue
		cohort []kueue.ClusterQueue
		want   bool
	}{
		"nothing pending": {
			own: gpus("cq", "8", "8", 0).Obj(),
		},
		"pending, with room for as much again: the pending wait for Kueue, not for quota": {
			own: gpus("cq", "100000", "8", 40).Obj(),
		},
		"pending, and as much again would not fit": {
			own:  gpus("cq", "8", "8", 1).Obj(),
			want: true,
		},
		"pending, and as much again would just fit": {
			own: gpus("cq", "12", "8", 1).Obj(),
		},
		"pending, with another flavor full": {
			own: kueuetesting.MakeClusterQueue("cq").Quota("a100", "nvidia.com/gpu", "16").Quota("h100", "nvidia.com/gpu", "8").
				Reserved("a100", "nvidia.com/gpu", "4").Reserved("h100", "nvidia.com/gpu", "8").Pending(3).Obj(),
		},
		"pending, with nothing reserved in the status yet and too small a quota": {
			own:  kueuetesting.MakeClusterQueue("cq").Quota("a100", "nvidia.com/gpu", "2").Pending(1).Obj(),
			want: true,
		},
		"alone, another ClusterQueue full and waiting: it cannot borrow": {
			own:    gpus("cq", "8", "4", 0).Obj(),
			cohort: []kueue.ClusterQueue{*gpus("other", "8", "8", 5).Cohort("team").Obj()},
		},
		"in a cohort, a peer full and waiting: it may borrow": {
			own:    gpus("cq", "8", "4", 0).Cohort("team").Obj(),
			cohort: []kueue.ClusterQueue{*gpus("cq", "8", "4", 0).Cohort("team").Obj(), *gpus("other", "8", "8", 5).Cohort("team").Obj()},
			want:   true,
		},
		"in a cohort, a peer in another cohort full and waiting: cohorts may nest": {
			own:    gpus("cq", "8", "4", 0).Cohort("team").Obj(),
			cohort: []kueue.ClusterQueue{*gpus("other", "8", "8", 5).Cohort("org").Obj()},
			want:   true,
		},
		"in a cohort, a peer waiting without the flavor": {
			own: gpus("cq", "8", "4", 0).Cohort("team").Obj(),
			cohort: []kueue.ClusterQueue{*kueuetesting.MakeClusterQueue("other").Quota("h100", "nvidia.com/gpu", "8").
				Reserved("h100", "nvidia.com/gpu", "8").Pending(5).Cohort("team").Obj()},
		},
		"in a cohort, a peer alone full and waiting: it borrows from none": {
			own:    gpus("cq", "8", "4", 0).Cohort("team").Obj(),
			cohort: []kueue.ClusterQueue{*gpus("other", "8", "8", 5).Obj()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Wanted(held, tc.own, tc.cohort)); diff != "" {
				t.Errorf("Wanted() (-want +got):\n%s", diff)
			}
		})
	}
}
