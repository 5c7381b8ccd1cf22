package plan

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// What the planner reads off an observation besides its fields: where the
// job is placed, whether a worker is done with it, which copies remain.

// WaitsForWorker reports whether the workload is admitted on the manager,
// not placed for this admission, and may be: only then does placement
// need the candidates.
func WaitsForWorker(o Observed) bool {
	return holdsAdmission(o) && LivePlacement(o) == ""
}

// CarriedOn returns the worker on which a plan may carry the job on, or
// "": only for it does a plan compare the job with its copy, to forward
// the manager's changes (planRunning). A job that ended, or whose check is
// in Retry or Rejected, is carried no further: planFor sends it elsewhere
// before it looks at the placement.
func CarriedOn(o Observed) string {
	if !holdsAdmission(o) || o.JobEnd.Finished ||
		o.Check.State == kueue.CheckStateRetry || o.Check.State == kueue.CheckStateRejected {
		return ""
	}
	return LivePlacement(o)
}

// holdsAdmission reports whether the workload holds its admission on the
// manager: quota reserved, not evicted, not finished, active, and its job
// there.
func holdsAdmission(o Observed) bool {
	wl := o.Workload
	return isTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) && !isTrue(wl.Status.Conditions, kueue.WorkloadEvicted) &&
		!isTrue(wl.Status.Conditions, kueue.WorkloadFinished) && isActive(wl) && !o.JobMissing
}

// LivePlacement returns the worker the job is placed on for the current
// admission, or "".
func LivePlacement(o Observed) string {
	if p := o.Placement; p != nil && p.Evictions == o.Evictions {
		return p.Cluster
	}
	if o.Placement == nil && o.Workload.Status.ClusterName != nil {
		return *o.Workload.Status.ClusterName
	}
	return ""
}

// isTrue reports whether a condition of the type is True.
func isTrue(conds []metav1.Condition, t string) bool { return meta.IsStatusConditionTrue(conds, t) }

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

func isActive(wl *kueue.Workload) bool { return wl.Spec.Active == nil || *wl.Spec.Active }

// requeueSoon is when to look again at state that is about to change.
const requeueSoon = time.Second

// remnantRecheck is how often a pass looks again for a remnant: it is not
// in the workers' informers, so no event says it went.
const remnantRecheck = 5 * time.Second

// unseenCopyRecheck is how long a copy Courier created counts as there
// while its worker's informer does not show it (expect.CreatedTTL): a pass
// that waits for one looks again then, in case it is gone.
const unseenCopyRecheck = 30 * time.Second

// leaving reports whether a worker's Workload copy is going, or no longer
// holds its quota there: evicted, not reserving quota, or being deleted.
func leaving(wl *kueue.Workload) bool {
	ev := findCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	return wl.DeletionTimestamp != nil || (ev != nil && ev.Status == metav1.ConditionTrue) || !isTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
}

// endedOn reports whether a worker's copies show the job's end: its job
// copy, or its Workload copy, which the worker's Kueue finishes once it saw
// the job's end.
func endedOn(r Remote) bool {
	return (r.HasJob && r.JobOutcome.Finished) || (r.Workload != nil && isTrue(r.Workload.Status.Conditions, kueue.WorkloadFinished))
}

// copiesGone reports whether worker c is known to hold no copy of the
// Workload: connected and holding none, or lost for workerLostTimeout.
func copiesGone(o Observed, c string) bool {
	h := o.Health[c]
	if h.Connected {
		return !o.Remotes[c].holdsCopies()
	}
	move, _, _ := lostFate(o, c)
	return move
}

// oldJobOn names the first connected worker but except that still holds a
// job copy that is being deleted or is not this admission's, or "". Its
// pods may run until it is gone, so the job goes nowhere before then; a
// worker out of reach is left to the lost-worker policy.
func oldJobOn(o Observed, except string) string {
	var on []string
	for cluster, r := range o.Remotes {
		if r.OldJob && o.Health[cluster].Connected && cluster != except {
			on = append(on, cluster)
		}
	}
	if len(on) == 0 {
		return ""
	}
	return slices.Min(on)
}
