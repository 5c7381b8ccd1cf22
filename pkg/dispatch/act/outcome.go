package act

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/metrics"
	"github.com/courierdev/courier/pkg/placement"
)

// outcome is what one pass's plan means for Courier's metrics (see
// pkg/metrics). Each part is counted only once the write that carries it
// succeeded, so that a pass refused on a conflict, and planned again,
// counts once. The placement record and the job copy are counted where
// they are written.
type outcome struct {
	// Counted when the status write succeeds.
	//
	// readyOn names the worker the check turns Ready for, on a dispatch;
	// reserved is when the Workload's quota was reserved.
	readyOn  string
	reserved time.Time
	// retryOn names the worker a placed workload is given up on, and
	// retryReason the event's reason.
	retryOn, retryReason string
	// rejectedBy are the workers that refused the job, for rejectReason.
	rejectedBy   []string
	rejectReason string
	// decision is the placement decision, and verdicts the planner's view
	// of each worker, by name, when it ranked them.
	decision string
	verdicts map[string]string

	// evictedFrom names the worker whose copies go because the manager
	// evicted or deactivated the workload; counted once they are removed.
	evictedFrom string
}

// outcomeOf reads the plan's events, which it records exactly when a
// transition happens (the check turning Ready, Retry or Rejected, a new
// nomination), so that a plan carried out again counts nothing twice.
func outcomeOf(o plan.Observed, p plan.Plan) outcome {
	var out outcome
	if pl := o.Placement; pl != nil && managerEvicted(o.Workload) && slices.Contains(p.Delete, pl.Cluster) {
		out.evictedFrom = pl.Cluster
	}
	if p.Status == nil {
		return out
	}
	for _, e := range p.Events {
		switch e.Reason {
		case courier.EventDispatched:
			if p.Status.ClusterName != nil {
				out.readyOn = *p.Status.ClusterName
			}
			if c := meta.FindStatusCondition(o.Workload.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil {
				out.reserved = c.LastTransitionTime.Time
			}
		case courier.EventRemoteEvicted, courier.EventWorkerLost, courier.EventWorkerUnusable, courier.EventWorkerDraining:
			out.retryOn, out.retryReason = plan.LivePlacement(o), e.Reason
		case courier.EventRejected:
			// A job the manager refuses by itself (managedBy, a kind
			// Courier does not handle) is no worker's refusal.
			if o.Rejection == "" {
				out.rejectedBy, out.rejectReason = candidateNames(o), e.Reason
			}
		case courier.EventNoCapacity:
			out.rejectedBy, out.rejectReason = candidateNames(o), e.Reason
			out.decision = metrics.DecisionNoCapacity
		case courier.EventWaitedTooLong:
			out.decision = metrics.DecisionWaitedTooLong
		}
	}
	if out.decision == "" && nominates(o, p) {
		out.decision = metrics.DecisionNominated
	}
	if out.decision == "" && p.Status.State == kueue.CheckStatePending && strings.HasPrefix(p.Status.Message, plan.NoWorkerNow) {
		out.decision = metrics.DecisionWaiting
	}
	if out.decision != "" && p.Decision != nil {
		out.verdicts = verdicts(o, p.Decision)
	}
	return out
}

// nominates reports whether the plan's status write sends copies to a new
// set of workers; a first nomination has no event to say so.
func nominates(o plan.Observed, p plan.Plan) bool {
	n := p.Status.Nominated
	return len(n) > 0 && !slices.Equal(n, o.Workload.Status.NominatedClusterNames)
}

// managerEvicted reports whether the manager evicted or deactivated the
// Workload; an eviction for Courier's own Retry or Rejected is the
// worker's doing, counted when the check went Retry.
func managerEvicted(wl *kueue.Workload) bool {
	ev := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	return (wl.Spec.Active != nil && !*wl.Spec.Active) || (ev != nil && ev.Status == metav1.ConditionTrue && ev.Reason != kueue.WorkloadEvictedByAdmissionCheck)
}

func candidateNames(o plan.Observed) []string {
	names := make([]string, 0, len(o.Candidates))
	for _, c := range o.Candidates {
		names = append(names, c.Name)
	}
	return names
}

// verdicts classifies what the planner made of each candidate, in a
// bounded set of words (see pkg/metrics).
func verdicts(o plan.Observed, d *placement.Decision) map[string]string {
	failed := map[string]bool{}
	for _, e := range d.Errors {
		failed[e.Cluster] = true
	}
	cands := map[string]plan.Candidate{}
	for _, c := range o.Candidates {
		cands[c.Name] = c
	}
	out := make(map[string]string, len(d.Considered))
	for _, v := range d.Considered {
		c := cands[v.Cluster]
		switch {
		case v.Eligible && slices.Contains(d.Nominate, v.Cluster):
			out[v.Cluster] = metrics.VerdictNominated
		case v.Eligible:
			out[v.Cluster] = metrics.VerdictOutranked
		case c.Refuses != "":
			out[v.Cluster] = metrics.VerdictRefused
		case c.Unusable != "":
			out[v.Cluster] = metrics.VerdictUnusable
		case failed[v.Cluster]:
			out[v.Cluster] = metrics.VerdictPolicyError
		case v.Reason == placement.ReasonFilteredOut:
			out[v.Cluster] = metrics.VerdictFilteredOut
		default:
			out[v.Cluster] = metrics.VerdictNoFit
		}
	}
	return out
}

// statusWritten counts what the status write carried, at now.
func (out outcome) statusWritten(now time.Time) {
	if out.readyOn != "" && !out.reserved.IsZero() {
		metrics.ObserveDispatchLatency(out.readyOn, out.reserved, now)
	}
	if out.retryOn != "" {
		metrics.Redispatched(out.retryOn, out.retryReason)
	}
	for _, c := range out.rejectedBy {
		metrics.Rejected(c, out.rejectReason)
	}
	if out.decision != "" {
		metrics.Decided(out.decision, out.verdicts)
	}
}

// removed counts the copies removed from worker c.
func (out outcome) removed(c string) {
	if c == out.evictedFrom {
		metrics.EvictedByManager(c)
	}
}
