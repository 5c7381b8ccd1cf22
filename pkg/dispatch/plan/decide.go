package plan

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/placement"
)

// requeueSoon is when to look again at state that is about to change.
const requeueSoon = time.Second

// remnantRecheck is how often a pass looks again for a remnant: it is not
// in the workers' informers, so no event says it went.
const remnantRecheck = 5 * time.Second

// unseenCopyRecheck is how long a copy Courier created counts as there
// while its worker's informer does not show it (expect.CreatedTTL): a pass
// that waits for one looks again then, in case it is gone.
const unseenCopyRecheck = 30 * time.Second

// Decide decides the next step for one manager Workload. The job is placed
// on exactly one worker per admission, and the choice is recorded before
// the job is created there, so no later decision, made after a conflict or
// a restart, can pick another; only manager-side signals end remote work.
//
//  1. A finished Workload: mirror the final job status, then remove every
//     copy; a check still Pending turns Ready.
//  2. A Workload evicted, deactivated, without quota, or whose job is gone:
//     remove every copy Courier can reach, clear the nomination, and clear
//     the job's mirrored activity so that Kueue can release the quota.
//  3. A check in Retry or Rejected: wait for Kueue to evict.
//  4. A manager job whose status shows its end: finish the Workload, and
//     remove every copy that is not where the end came from (see
//     planJobEnded).
//  5. A placement recorded for this admission (or a clusterName without
//     one, from before records existed): carry it through on that worker
//     alone (see planPlaced).
//  6. A placement of an earlier admission: its copies must be gone, or
//     its worker lost, before anything is dispatched again.
//  7. Otherwise the job is not placed yet (see planUnplaced).
func Decide(o Observed) Plan {
	switch {
	case o.Behind:
		// Courier's own last write, or the one that refused Courier's, is
		// not in the cache yet; its event brings the next pass. The
		// requeue is only a backstop.
		return Plan{RequeueAfter: requeueSoon}
	case o.Disowned:
		return Plan{RemoveEverywhere: true}
	case o.JobBehind:
		// The job's status events do not bring passes: look again soon.
		return Plan{RequeueAfter: requeueSoon}
	}
	if o.PlacementInput != nil {
		d := placement.Plan(*o.PlacementInput)
		o.Decision = &d
	}
	p := decide(o)
	p.Decision = o.Decision
	return p
}

// decide is Decide once the placement planner, if asked, has decided.
func decide(o Observed) Plan {
	p := planFor(o)
	p.Recheck = recheck(o)
	for _, r := range o.Remotes {
		if r.Remnant {
			p.RequeueAfter = soonest(p.RequeueAfter, remnantRecheck)
		}
	}
	if p.CreateJob != "" {
		for name, h := range o.Health {
			if !h.Connected {
				p.Unreached = append(p.Unreached, name)
			}
		}
		slices.Sort(p.Unreached)
	}
	return p
}

func planFor(o Observed) Plan {
	wl := o.Workload
	switch {
	case isTrue(wl.Status.Conditions, kueue.WorkloadFinished):
		return planFinished(o)
	case !isTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) || isTrue(wl.Status.Conditions, kueue.WorkloadEvicted) ||
		!isActive(wl) || o.JobMissing:
		return planEnded(o)
	case o.Check.State == kueue.CheckStateRetry || o.Check.State == kueue.CheckStateRejected:
		return Plan{}
	case o.JobEnd.Finished:
		return planJobEnded(o)
	}
	if cluster := LivePlacement(o); cluster != "" {
		return planPlaced(o, cluster)
	}
	if o.Placement != nil {
		return planEarlierPlacement(o)
	}
	return planUnplaced(o)
}

// WaitsForWorker reports whether the workload is admitted on the manager,
// not placed for this admission, and may be: only then does placement
// need the candidates.
func WaitsForWorker(o Observed) bool {
	wl := o.Workload
	return isTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) && !isTrue(wl.Status.Conditions, kueue.WorkloadEvicted) &&
		!isTrue(wl.Status.Conditions, kueue.WorkloadFinished) && isActive(wl) && !o.JobMissing && LivePlacement(o) == ""
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

// recheck is when a pass must look again whatever it does: when the first
// pass-over in force ends, since nothing else announces that a worker may
// be used again, and soon while a job copy Courier created elsewhere has
// not shown, since no event comes should it never show.
func recheck(o Observed) time.Duration {
	var out time.Duration
	for _, n := range o.PassedOver {
		// A pass-over still holds at Until itself.
		out = soonest(out, n.Until.Sub(o.Now)+time.Millisecond)
	}
	if o.UnseenJob {
		out = soonest(out, requeueSoon)
	}
	return out
}

// isTrue reports whether a condition of the type is True.
func isTrue(conds []metav1.Condition, t string) bool { return meta.IsStatusConditionTrue(conds, t) }

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

func isActive(wl *kueue.Workload) bool { return wl.Spec.Active == nil || *wl.Spec.Active }
