package dispatch

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Observed is what the planner decides on: the manager Workload and what
// Courier found of it on the workers, all read from caches.
type Observed struct {
	Now      time.Time
	Workload *kueue.Workload
	// Check is Courier's admission check on the Workload.
	Check kueue.AdmissionCheckState
	// JobMissing: the Workload's job is gone from the manager.
	JobMissing bool
	// Rejection says why the job must not be dispatched, if so.
	Rejection string
	// Misconfigured says why nothing may be dispatched for now, if so.
	Misconfigured string
	// Candidates are the clusters of the policy, in name order.
	Candidates []Candidate
	// Remotes are the copies found on connected clusters, by cluster.
	Remotes map[string]Remote
	// Health of every cluster that holds a copy or the dispatched job.
	Health map[string]Health
	// WorkerLostTimeout is how long a dispatched job's worker may be
	// unreachable before the job is dispatched again.
	WorkerLostTimeout time.Duration
}

// Candidate is a cluster the policy allows.
type Candidate struct {
	Name string
	// Unusable says why the cluster cannot take the job now; empty if it can.
	Unusable string
}

// Remote is what one connected worker holds for the Workload.
type Remote struct {
	// Workload is Courier's copy, nil if there is none.
	Workload *kueue.Workload
	// HasJob: Courier's copy of the job exists.
	HasJob bool
	// Stale: a Workload copy of an earlier manager Workload of the same
	// name is there; it must go.
	Stale bool
}

func (r Remote) holdsCopies() bool { return r.Workload != nil || r.HasJob || r.Stale }

// Health is a worker's connection, as far as dispatch cares.
type Health struct {
	Connected bool
	// DisconnectedSince is set while the worker is lost to network failure.
	DisconnectedSince *metav1.Time
}

// Plan is what to do: remote writes first, then one status write on the
// manager Workload, then events.
type Plan struct {
	// Delete lists clusters whose copies (Workload and job) go.
	Delete []string
	// Create lists clusters that get a Workload copy.
	Create []string
	// CreateJob names the cluster that gets the job, if any. The status
	// change is applied only once the job exists there.
	CreateJob string
	// SyncJob names the cluster whose job status is mirrored, if any.
	SyncJob string
	// ClearJobActivity removes the mirrored activity from the manager's
	// job once its copies are given up, so that Kueue can release its quota.
	ClearJobActivity bool
	// Status is the manager Workload's status change, nil for none.
	Status *StatusChange
	// Events are recorded after the status write.
	Events []Event
	// RequeueAfter asks for another look at this time, if set.
	RequeueAfter time.Duration
}

// StatusChange is the part of the manager Workload's status Courier owns.
type StatusChange struct {
	State   kueue.CheckState
	Message string
	// ClusterName and Nominated are the new values of status.clusterName
	// and status.nominatedClusterNames.
	ClusterName *string
	Nominated   []string
	// Finished, if set, finishes the Workload.
	Finished *metav1.Condition
}

// Event is one event on the manager Workload.
type Event struct {
	Type, Reason, Message string
}

// plan decides the next step for one manager Workload, in this order:
//
//  1. A finished Workload: remove every copy; a check still Pending turns
//     Ready, so that no check is left Pending on a finished Workload.
//  2. A Workload without quota, evicted, deactivated, or whose job is gone:
//     remove every copy and clear the nomination, and clear the job's
//     mirrored activity (Kueue frees the quota of an evicted job only once
//     it is inactive, which a lost worker never reports).
//  3. A check in Retry or Rejected: wait for Kueue to evict.
//  4. A job that cannot be dispatched: Rejected.
//  5. A dispatched Workload (status.clusterName set): remove copies
//     elsewhere; mirror the job's status; finish the Workload when the
//     worker finished it; Retry when the worker evicted it, lost it, or has
//     been unreachable for longer than workerLostTimeout.
//  6. Otherwise the first copy a worker admitted wins: the others go, the
//     job is created there, and the check turns Ready naming the cluster.
//  7. Without a winner, every usable candidate gets a copy and is
//     nominated; copies on other clusters go.
func plan(o Observed) Plan {
	wl := o.Workload
	switch {
	case isTrue(wl.Status.Conditions, kueue.WorkloadFinished):
		p := Plan{Delete: withCopies(o.Remotes, "")}
		if o.Check.State == kueue.CheckStatePending {
			p.Status = &StatusChange{State: kueue.CheckStateReady, Message: "The workload finished.", ClusterName: wl.Status.ClusterName}
		}
		return p
	case !isTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) || isTrue(wl.Status.Conditions, kueue.WorkloadEvicted) ||
		!isActive(wl) || o.JobMissing:
		p := Plan{Delete: withCopies(o.Remotes, ""), ClearJobActivity: !o.JobMissing}
		if len(wl.Status.NominatedClusterNames) > 0 || wl.Status.ClusterName != nil {
			p.Status = &StatusChange{State: o.Check.State, Message: o.Check.Message}
		}
		return p
	case o.Check.State == kueue.CheckStateRetry || o.Check.State == kueue.CheckStateRejected:
		return Plan{}
	case o.Rejection != "":
		return Plan{
			Delete: withCopies(o.Remotes, ""),
			Status: &StatusChange{State: kueue.CheckStateRejected, Message: o.Rejection},
			Events: []Event{{Type: "Warning", Reason: courier.EventRejected, Message: o.Rejection}},
		}
	case wl.Status.ClusterName != nil:
		return planDispatched(o, *wl.Status.ClusterName)
	case o.Misconfigured != "":
		p := pending(o, o.Misconfigured, nil, Event{Type: "Warning", Reason: courier.EventMisconfigured, Message: o.Misconfigured})
		p.Delete = withCopies(o.Remotes, "")
		return p
	}
	if winner := firstAdmitted(o); winner != "" {
		return planWinner(o, winner)
	}
	return planNominate(o)
}

func planDispatched(o Observed, cluster string) Plan {
	p := Plan{Delete: withCopies(o.Remotes, cluster)}
	h := o.Health[cluster]
	r := o.Remotes[cluster]
	retry := func(reason, msg string) Plan {
		p.Status = &StatusChange{State: kueue.CheckStateRetry, Message: msg, ClusterName: &cluster}
		p.Events = append(p.Events, Event{Type: "Warning", Reason: reason, Message: msg})
		return p
	}
	switch {
	case !h.Connected:
		if h.DisconnectedSince == nil {
			// Connecting, or a configuration error: the worker may well be
			// running the job; a person must fix the connection.
			return p
		}
		lostFor := o.Now.Sub(h.DisconnectedSince.Time)
		if lostFor < o.WorkerLostTimeout {
			p.RequeueAfter = o.WorkerLostTimeout - lostFor
			return p
		}
		return retry(courier.EventWorkerLost, fmt.Sprintf("Worker %q has been unreachable since %s, longer than workerLostTimeout (%s); dispatching the workload again.",
			cluster, h.DisconnectedSince.UTC().Format(time.RFC3339), o.WorkerLostTimeout))
	case r.Workload == nil:
		return retry(courier.EventRemoteEvicted, fmt.Sprintf("The workload's copy on worker %q is gone; dispatching the workload again.", cluster))
	}
	if fin := findCondition(r.Workload.Status.Conditions, kueue.WorkloadFinished); fin != nil && fin.Status == metav1.ConditionTrue {
		if fin.Reason == kueue.WorkloadFinishedReasonOutOfSync {
			return retry(courier.EventRemoteEvicted, fmt.Sprintf("Worker %q found its job out of sync with the workload: %s; dispatching the workload again.", cluster, fin.Message))
		}
		if r.HasJob {
			p.SyncJob = cluster
		}
		msg := fmt.Sprintf("The workload finished on worker %q.", cluster)
		p.Status = &StatusChange{
			State: kueue.CheckStateReady, Message: msg, ClusterName: &cluster,
			Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: fin.Reason, Message: fin.Message},
		}
		p.Events = append(p.Events, Event{Type: "Normal", Reason: courier.EventFinished, Message: msg + " " + fin.Message})
		return p
	}
	if ev := findCondition(r.Workload.Status.Conditions, kueue.WorkloadEvicted); (ev != nil && ev.Status == metav1.ConditionTrue) ||
		!isTrue(r.Workload.Status.Conditions, kueue.WorkloadQuotaReserved) {
		why := "it lost its quota reservation"
		if ev != nil && ev.Status == metav1.ConditionTrue {
			why = fmt.Sprintf("%s: %s", ev.Reason, ev.Message)
		}
		return retry(courier.EventRemoteEvicted, fmt.Sprintf("Worker %q evicted the workload (%s); dispatching the workload again.", cluster, why))
	}
	if r.HasJob {
		p.SyncJob = cluster
	} else {
		p.CreateJob = cluster
	}
	return p
}

func planWinner(o Observed, winner string) Plan {
	wl := o.Workload
	p := Plan{Delete: withCopies(o.Remotes, winner)}
	if !slices.Contains(wl.Status.NominatedClusterNames, winner) {
		// Kueue accepts a clusterName only from the nominated clusters.
		nominated := append(slices.Clone(wl.Status.NominatedClusterNames), winner)
		slices.Sort(nominated)
		p.Status = &StatusChange{State: kueue.CheckStatePending, Message: o.Check.Message, Nominated: nominated}
		p.RequeueAfter = time.Second
		return p
	}
	if !o.Remotes[winner].HasJob {
		p.CreateJob = winner
	}
	msg := fmt.Sprintf("Dispatched to worker %q, whose Kueue admitted the workload.", winner)
	p.Status = &StatusChange{State: kueue.CheckStateReady, Message: msg, ClusterName: &winner}
	p.Events = []Event{{Type: "Normal", Reason: courier.EventDispatched, Message: msg}}
	return p
}

func planNominate(o Observed) Plan {
	var usable, unusable []string
	for _, c := range o.Candidates {
		if c.Unusable == "" {
			usable = append(usable, c.Name)
		} else {
			unusable = append(unusable, fmt.Sprintf("%s: %s", c.Name, c.Unusable))
		}
	}
	var p Plan
	for cluster, r := range o.Remotes {
		if r.holdsCopies() && (r.Stale || !slices.Contains(usable, cluster)) {
			p.Delete = append(p.Delete, cluster)
		}
	}
	slices.Sort(p.Delete)
	if len(usable) == 0 {
		msg := "No worker can take the workload now."
		if len(unusable) > 0 {
			msg = fmt.Sprintf("No worker can take the workload now: %s.", strings.Join(unusable, "; "))
		}
		q := pending(o, msg, nil)
		q.Delete = p.Delete
		return q
	}
	for _, cluster := range usable {
		if o.Remotes[cluster].Workload == nil {
			p.Create = append(p.Create, cluster)
		}
	}
	msg := fmt.Sprintf("Waiting for one of the nominated workers (%s) to admit the workload.", strings.Join(usable, ", "))
	if len(unusable) > 0 {
		msg += fmt.Sprintf(" Not nominated: %s.", strings.Join(unusable, "; "))
	}
	var events []Event
	if !slices.Equal(o.Workload.Status.NominatedClusterNames, usable) {
		events = append(events, Event{Type: "Normal", Reason: courier.EventNominated, Message: fmt.Sprintf("Copied the workload to %s.", strings.Join(usable, ", "))})
	}
	q := pending(o, msg, usable, events...)
	q.Delete, q.Create = p.Delete, p.Create
	return q
}

// pending keeps the check Pending with msg and the nomination, writing
// only what changed.
func pending(o Observed, msg string, nominated []string, events ...Event) Plan {
	if o.Check.State == kueue.CheckStatePending && o.Check.Message == msg && slices.Equal(o.Workload.Status.NominatedClusterNames, nominated) {
		return Plan{}
	}
	return Plan{
		Status: &StatusChange{State: kueue.CheckStatePending, Message: msg, Nominated: nominated},
		Events: events,
	}
}

// firstAdmitted returns the connected cluster whose copy was admitted
// first, ties broken by name, or "".
func firstAdmitted(o Observed) string {
	type admitted struct {
		cluster string
		at      time.Time
	}
	var all []admitted
	for cluster, r := range o.Remotes {
		if r.Workload == nil || !o.Health[cluster].Connected || !usable(o.Candidates, cluster) {
			continue
		}
		if c := findCondition(r.Workload.Status.Conditions, kueue.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue {
			all = append(all, admitted{cluster, c.LastTransitionTime.Time})
		}
	}
	if len(all) == 0 {
		return ""
	}
	return slices.MinFunc(all, func(a, b admitted) int {
		return cmp.Or(a.at.Compare(b.at), strings.Compare(a.cluster, b.cluster))
	}).cluster
}

func usable(candidates []Candidate, cluster string) bool {
	i := slices.IndexFunc(candidates, func(c Candidate) bool { return c.Name == cluster })
	return i >= 0 && candidates[i].Unusable == ""
}

// withCopies lists, in order, the clusters holding a copy, except keep.
func withCopies(remotes map[string]Remote, keep string) []string {
	var out []string
	for cluster, r := range remotes {
		if (cluster != keep && r.holdsCopies()) || r.Stale {
			out = append(out, cluster)
		}
	}
	slices.Sort(out)
	return out
}
