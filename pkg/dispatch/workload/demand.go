package workload

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/placement"
)

// PodSets are a Workload's pod sets as the placement planner counts them.
func PodSets(wl *kueue.Workload) []placement.PodSet {
	out := make([]placement.PodSet, 0, len(wl.Spec.PodSets))
	for i := range wl.Spec.PodSets {
		ps := &wl.Spec.PodSets[i]
		out = append(out, placement.PodSet{Name: string(ps.Name), Count: ps.Count, Requests: placement.PodRequests(&ps.Template.Spec)})
	}
	return out
}

// Queue names a Workload's LocalQueue with its namespace.
func Queue(wl *kueue.Workload) string { return wl.Namespace + "/" + string(wl.Spec.QueueName) }

// WaitingSince is when wl began to wait for a worker: when it got its
// quota on the manager. Rounds and maxWaitTime count from it.
func WaitingSince(wl *kueue.Workload, now time.Time) time.Time {
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	return now
}
