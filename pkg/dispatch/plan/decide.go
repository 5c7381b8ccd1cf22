// Package plan decides, for one manager Workload, the next step of its
// dispatch: a pure function (Decide) of what the observe step read, with
// the placement planner (pkg/placement) choosing among the candidates. It
// reads no cluster and writes nothing; the act step carries its Plan out.
package plan

import (
	"slices"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/placement"
)

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
			p.RequeueAfter = Soonest(p.RequeueAfter, remnantRecheck)
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

// recheck is when a pass must look again whatever it does: when the first
// pass-over in force ends, since nothing else announces that a worker may
// be used again, and soon while a job copy Courier created elsewhere has
// not shown, since no event comes should it never show.
func recheck(o Observed) time.Duration {
	var out time.Duration
	for _, n := range o.PassedOver {
		// A pass-over still holds at Until itself.
		out = Soonest(out, n.Until.Sub(o.Now)+time.Millisecond)
	}
	if o.UnseenJob {
		out = Soonest(out, requeueSoon)
	}
	return out
}
