package dispatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/quota"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestHoldsQuota(t *testing.T) {
	cases := map[string]struct {
		wl   *kueuetesting.WorkloadWrapper
		want []string
	}{
		"pending":         {wl: kueuetesting.MakeWorkload("wl", "ns")},
		"quota reserved":  {wl: kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq"), want: []string{"cq"}},
		"admitted":        {wl: kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Admit(time.Now()), want: []string{"cq"}},
		"finished":        {wl: kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", time.Now())},
		"finish not true": {wl: kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq").Condition(kueue.WorkloadFinished, metav1.ConditionFalse, "", time.Now()), want: []string{"cq"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, holdsQuota(tc.wl.Obj())); diff != "" {
				t.Errorf("holdsQuota() (-want +got):\n%s", diff)
			}
		})
	}
}

// A ClusterQueue's status is written at every admission of a busy queue;
// only the writes that may leave it short of room for what waits list the
// Workloads holding quota.
func TestMayWantMore(t *testing.T) {
	gpus := func(reserved string, pending int32) *kueuetesting.ClusterQueueWrapper {
		return kueuetesting.MakeClusterQueue("cq").Quota("a100", "nvidia.com/gpu", "8").Reserved("a100", "nvidia.com/gpu", reserved).Pending(pending)
	}
	cases := map[string]struct {
		old, cur *kueue.ClusterQueue
		want     bool
	}{
		"created with nothing pending":   {cur: gpus("8", 0).Obj()},
		"created with Workloads pending": {cur: gpus("8", 1).Obj(), want: true},
		"something comes to wait":        {old: gpus("8", 0).Obj(), cur: gpus("8", 1).Obj(), want: true},
		"more come to wait":              {old: gpus("8", 1).Obj(), cur: gpus("8", 3).Obj()},
		"a reservation while some wait":  {old: gpus("4", 2).Obj(), cur: gpus("8", 1).Obj(), want: true},
		"a reservation, nothing waiting": {old: gpus("4", 0).Obj(), cur: gpus("8", 0).Obj()},
		"the quota cut while some wait": {
			old: gpus("4", 2).Obj(), cur: kueuetesting.MakeClusterQueue("cq").Quota("a100", "nvidia.com/gpu", "4").Reserved("a100", "nvidia.com/gpu", "4").Pending(2).Obj(), want: true,
		},
		"joins a cohort while some wait": {old: gpus("4", 2).Obj(), cur: gpus("4", 2).Cohort("team").Obj(), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mayWantMore(tc.old, tc.cur)); diff != "" {
				t.Errorf("mayWantMore() (-want +got):\n%s", diff)
			}
		})
	}
}

// Exactly the Workloads whose quota a ClusterQueue did not want and now
// does are queued: each such Workload of an ended job was left to the
// manager's Kueue with its next look minutes away.
func TestNewlyWants(t *testing.T) {
	// The Workload holds 4 GPUs of flavor a100.
	held := quota.Amounts{{Flavor: "a100", Resource: "nvidia.com/gpu"}: 4000}
	gpus := func(name, reserved string, pending int32) *kueuetesting.ClusterQueueWrapper {
		return kueuetesting.MakeClusterQueue(name).Quota("a100", "nvidia.com/gpu", "8").Reserved("a100", "nvidia.com/gpu", reserved).Pending(pending)
	}
	cases := map[string]struct {
		holder   string
		old, cur *kueue.ClusterQueue
		want     bool
	}{
		"its ClusterQueue, full, comes to have one waiting": {
			holder: "cq", old: gpus("cq", "8", 0).Obj(), cur: gpus("cq", "8", 1).Obj(), want: true,
		},
		"its ClusterQueue, full and waiting already": {
			holder: "cq", old: gpus("cq", "8", 1).Obj(), cur: gpus("cq", "8", 2).Obj(),
		},
		"its ClusterQueue, waiting, fills up": {
			holder: "cq", old: gpus("cq", "4", 1).Obj(), cur: gpus("cq", "8", 1).Obj(), want: true,
		},
		"its ClusterQueue, waiting, with room for as much again": {
			holder: "cq", old: gpus("cq", "0", 0).Obj(), cur: gpus("cq", "4", 1).Obj(),
		},
		"its ClusterQueue created full and waiting": {
			holder: "cq", cur: gpus("cq", "8", 1).Obj(), want: true,
		},
		"a peer in a cohort, full, comes to have one waiting": {
			holder: "cq", old: gpus("other", "8", 0).Cohort("team").Obj(), cur: gpus("other", "8", 1).Cohort("team").Obj(), want: true,
		},
		"a peer alone, full, comes to have one waiting: it borrows from none": {
			holder: "cq", old: gpus("other", "8", 0).Obj(), cur: gpus("other", "8", 1).Obj(),
		},
		"a peer, full and waiting, joins a cohort": {
			holder: "cq", old: gpus("other", "8", 1).Obj(), cur: gpus("other", "8", 1).Cohort("team").Obj(), want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, newlyWants(tc.old, tc.cur)(held, tc.holder)); diff != "" {
				t.Errorf("newlyWants() (-want +got):\n%s", diff)
			}
		})
	}
}
