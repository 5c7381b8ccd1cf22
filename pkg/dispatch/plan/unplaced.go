package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// planUnplaced decides for a job not placed yet, in this order:
//
//  1. A job that cannot be dispatched: Rejected.
//  2. A check whose AdmissionCheck is gone, other checks not Ready yet, or
//     a misconfiguration: Pending, saying why, and nothing new goes out.
//  3. A workload workers evicted more than its policy's maxMoves times
//     for one reason: Rejected, or pending and sent nowhere.
//     A workload no worker's quota could ever hold: Rejected. One that
//     waited longer than the policy's maxWaitTime: Retry, with why.
//  4. While a connected worker still holds an earlier copy of the job, or
//     one being deleted, nothing is dispatched: it must go first.
//  5. The first copy a nominated worker admitted wins: the others go, the
//     winner is recorded, the job is created there, and the check turns
//     Ready.
//  6. Without a winner, the clusters the planner nominates (see
//     pkg/placement: the policy's strategy, filter and score over the
//     workers' capacity) get a copy; copies on other clusters go.
func planUnplaced(o Observed) Plan {
	rejection := o.Rejection
	if rejection == "" {
		rejection = refusedEverywhere(o.Candidates)
	}
	switch {
	case rejection != "":
		return endAttempt(o, kueue.CheckStateRejected, courier.EventRejected, rejection)
	case o.CheckMissing != "":
		// The check may be back in a moment (an install tool replacing it);
		// the copies hold no job, and stay.
		return pending(o, o.CheckMissing, o.Workload.Status.NominatedClusterNames)
	case len(o.ChecksNotReady) > 0:
		p := pending(o, fmt.Sprintf("Waiting for the admission checks %s to be Ready before dispatching.", strings.Join(o.ChecksNotReady, ", ")), nil)
		p.Delete = withCopies(o.Remotes, "")
		return p
	case o.Misconfigured != "":
		p := pending(o, o.Misconfigured, nil, Event{Type: "Warning", Reason: courier.EventMisconfigured, Message: o.Misconfigured})
		p.Delete = withCopies(o.Remotes, "")
		return p
	}
	if p, ok := movesExhausted(o); ok {
		return p
	}
	switch {
	case o.Decision != nil && o.Decision.Impossible:
		return endAttempt(o, kueue.CheckStateRejected, courier.EventNoCapacity,
			"No worker's quota could ever hold the whole workload. "+o.Decision.Message)
	case o.Decision != nil && o.Decision.Expired && firstAdmitted(o) == "":
		return endAttempt(o, kueue.CheckStateRetry, courier.EventWaitedTooLong,
			"No worker admitted the workload within the policy's maxWaitTime; requeueing it. "+o.Decision.Message)
	}
	if c := oldJobOn(o, ""); c != "" {
		p := pending(o, waitingForOldJob(o, c), nil)
		p.Delete = withCopies(o.Remotes, "")
		return p
	}
	if winner := firstAdmitted(o); winner != "" {
		return planWinner(o, winner)
	}
	return planNominate(o)
}

// refusedEverywhere says why, when every candidate refuses the job as it
// is, and "" otherwise.
func refusedEverywhere(candidates []Candidate) string {
	if len(candidates) == 0 {
		return ""
	}
	var why []string
	for _, c := range candidates {
		if c.Refuses == "" {
			return ""
		}
		why = append(why, c.Name+": "+c.Refuses)
	}
	return Truncate("No worker can ever take the job as it is: "+strings.Join(why, "; "), MaxNoteLength)
}

// planWinner records the winner, creates the job there and turns the check
// Ready, in that order; the losers' copies go. Kueue accepts a clusterName
// only from the nominated clusters, so a winner not nominated yet is
// nominated first.
func planWinner(o Observed, winner string) Plan {
	wl := o.Workload
	p := Plan{Delete: withCopies(o.Remotes, winner)}
	if !slices.Contains(wl.Status.NominatedClusterNames, winner) {
		// The pass that made the copies had its nomination refused (for a
		// conflict, or the check changed), and with it the event: this one
		// reports them.
		nominated := append(slices.Clone(wl.Status.NominatedClusterNames), winner)
		slices.Sort(nominated)
		p.Status = &StatusChange{State: kueue.CheckStatePending, Message: o.Check.Message, Nominated: nominated}
		p.Events = nominationEvents(o, nominatedNow(o))
		p.RequeueAfter = time.Second
		return p
	}
	p.Record = &workload.Placement{Cluster: winner, Evictions: o.Evictions}
	switch r := o.Remotes[winner]; {
	case !r.HasJob && r.UnseenJob:
		p.RequeueAfter = unseenCopyRecheck // As in planPlaced.
	case !r.HasJob:
		p.CreateJob = winner
	}
	msg := fmt.Sprintf("Dispatched to worker %q, whose Kueue admitted the workload.", winner)
	p.Status = &StatusChange{State: kueue.CheckStateReady, Message: msg, ClusterName: &winner}
	p.Events = []Event{{Type: "Normal", Reason: courier.EventDispatched, Message: fmt.Sprintf("Dispatched to worker %q.", winner)}}
	return p
}

// NoWorkerNow begins the check message of a workload no worker can take now.
const NoWorkerNow = "No worker can take the workload now."

func planNominate(o Observed) Plan {
	nominated := nominatedNow(o)
	var remove []string
	for cluster, r := range o.Remotes {
		if r.holdsCopies() && (r.Stale || !slices.Contains(nominated, cluster)) {
			remove = append(remove, cluster)
		}
	}
	slices.Sort(remove)
	why := ""
	if o.Decision != nil {
		why = " " + o.Decision.Message
	}
	if len(nominated) == 0 {
		// pending writes, and so reports, only a changed message.
		p := pending(o, NoWorkerNow+why, nil, placementErrors(o)...)
		p.Delete = remove
		return p
	}
	// A copy created moments ago that the informer does not show yet is
	// not created again; its event brings the next pass.
	var create, unseen []string
	for _, cluster := range nominated {
		switch r := o.Remotes[cluster]; {
		case r.Workload == nil && r.UnseenWorkload:
			unseen = append(unseen, cluster)
		case r.Workload == nil:
			create = append(create, cluster)
		}
	}
	// Kueue keeps nominatedClusterNames sorted by name.
	sorted := slices.Sorted(slices.Values(nominated))
	var events []Event
	if !slices.Equal(o.Workload.Status.NominatedClusterNames, sorted) {
		events = nominationEvents(o, nominated)
	}
	p := pending(o, "Waiting for a nominated worker to admit the workload."+why, sorted, events...)
	p.Delete, p.Create = remove, create
	if d := o.Decision; d != nil {
		p.RequeueAfter = Soonest(d.NextRound, d.ExpiresIn)
		if d.NextRound > 0 {
			p.RequeueAfter = Soonest(p.RequeueAfter, recheckIn(o, nominated, append(create, unseen...)))
		}
	}
	if len(unseen) > 0 {
		// For a copy gone before it showed.
		p.RequeueAfter = Soonest(p.RequeueAfter, unseenCopyRecheck)
	}
	return planGate(o, p, nominated)
}

// recheckIn is when a young nomination is planned again: nominationRecheck
// after its newest copy was made. It is read from the copies, not from
// whether this pass changed the nomination: a pass run for another event
// in between would otherwise use up the recheck. Creation times have
// second precision, hence the extra second; 0 when nothing is young.
func recheckIn(o Observed, nominated, create []string) time.Duration {
	if len(create) > 0 {
		return nominationRecheck
	}
	var in time.Duration
	for _, c := range nominated {
		wl := o.Remotes[c].Workload
		if wl == nil {
			continue
		}
		age := o.Now.Sub(wl.CreationTimestamp.Time)
		if age >= 0 && age < nominationRecheck+time.Second {
			in = Soonest(in, nominationRecheck+time.Second-age)
		}
	}
	return in
}

// nominationRecheck is when a workload nominated anew, with workers left
// for later rounds, is planned again. Capacity snapshots are up to a
// second old and may still count a copy deleted a moment ago, or miss one
// Kueue admitted: a nomination made on one is looked at again once they
// have caught up, and widened to a worker with room, not a round later.
const nominationRecheck = 2 * time.Second

// nominationEvents report a nomination that changed: the workers that got
// a copy, why, and the clusters the policy's CEL failed on. A workload's
// first nomination has no event of its own: the check message and
// status.nominatedClusterNames say where its copies went, and the
// Dispatched event follows it in most cases within seconds. Each event is
// a write to the manager, and this one would be the third of every job's.
// A nomination that widens or moves does have one: it is history the
// status does not keep.
func nominationEvents(o Observed, clusters []string) []Event {
	if len(o.Workload.Status.NominatedClusterNames) == 0 {
		return placementErrors(o)
	}
	why := ""
	if o.Decision != nil {
		why = " " + o.Decision.Message
	}
	return append([]Event{{Type: "Normal", Reason: courier.EventNominated,
		Message: Truncate(fmt.Sprintf("Copied the workload to %s.%s", strings.Join(clusters, ", "), why), MaxNoteLength)}},
		placementErrors(o)...)
}

// placementErrors are the events for the clusters the policy's CEL failed
// on.
func placementErrors(o Observed) []Event {
	if o.Decision == nil {
		return nil
	}
	var events []Event
	for _, e := range o.Decision.Errors {
		events = append(events, Event{Type: "Warning", Reason: courier.EventPlacementError, Cluster: e.Cluster,
			Message: Truncate(fmt.Sprintf("Cluster %q is not eligible: %v.", e.Cluster, e.Err), MaxNoteLength)})
	}
	return events
}

// nominatedNow are the clusters that get or keep a copy now, best first.
func nominatedNow(o Observed) []string {
	if o.Decision == nil {
		return nil
	}
	return o.Decision.Nominate
}

// firstAdmitted returns the connected, usable cluster whose copy was
// admitted first, or "". A copy being deleted does not count. A cluster
// that already holds the job wins over the others: the job may have started
// there. Ties go by name.
func firstAdmitted(o Observed) string {
	type admitted struct {
		cluster string
		hasJob  bool
		at      time.Time
	}
	var all []admitted
	for cluster, r := range o.Remotes {
		if r.Workload == nil || r.Workload.DeletionTimestamp != nil || !o.Health[cluster].Connected || !slices.Contains(nominatedNow(o), cluster) {
			continue
		}
		if c := findCondition(r.Workload.Status.Conditions, kueue.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue {
			all = append(all, admitted{cluster, r.HasJob, c.LastTransitionTime.Time})
		}
	}
	if len(all) == 0 {
		return ""
	}
	return slices.MinFunc(all, func(a, b admitted) int {
		if a.hasJob != b.hasJob {
			if a.hasJob {
				return -1
			}
			return 1
		}
		return cmp.Or(a.at.Compare(b.at), strings.Compare(a.cluster, b.cluster))
	}).cluster
}
