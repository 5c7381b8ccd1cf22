package dispatch

import (
	"slices"
	"time"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/placement"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Observed is what the planner decides on: the manager Workload and what
// Courier found of it on the workers, all read from caches.
type Observed struct {
	Now      time.Time
	Workload *kueue.Workload
	// Check is Courier's admission check on the Workload. HasCheck is false
	// when the Workload carries none that Courier can write, which happens
	// only to a workload Courier placed whose check was removed.
	Check    kueue.AdmissionCheckState
	HasCheck bool
	// CheckMissing says, when set, that the AdmissionCheck object behind
	// Courier's check is gone: nothing new is dispatched, and what runs
	// goes on.
	CheckMissing string
	// ChecksNotReady are the Workload's other admission checks that are not
	// Ready yet; nothing leaves the manager before they are.
	ChecksNotReady []string
	// JobMissing: the Workload's job is gone from the manager.
	JobMissing bool
	// JobEnd is how the manager's job ended, as its status says, if it
	// did: Courier mirrored a worker copy's final status onto it. That
	// status is final; the job is neither dispatched nor mirrored again.
	JobEnd adapter.Outcome
	// jobBehind: the cache shows the manager's job as it was before Courier
	// mirrored its end; a plan now could dispatch it again.
	jobBehind bool
	// Rejection says why the job must not be dispatched, if so.
	Rejection string
	// Misconfigured says why nothing may be dispatched for now, if so.
	Misconfigured string
	// Placement is the worker Courier recorded for the job, nil if none.
	Placement *Placement
	// Evictions is how many times Kueue has evicted the Workload; a
	// placement recorded at a lower count belongs to an earlier admission.
	Evictions int32
	// PlacedRefusal says why the worker the job is placed on refused to
	// create it lately (a same-name object Courier does not own there, or
	// the worker's refusal), if it did; empty otherwise, and after a restart.
	PlacedRefusal string
	// PassedOver are the workers passed over for the job, by name, with
	// why and until when: a create there failed lately.
	PassedOver map[string]PassOver
	// UnseenJob: a worker other than the placed one counts a job copy
	// Courier created there moments ago as old (see observe); no event
	// comes should the copy never show, so the Workload is looked at
	// again soon.
	UnseenJob bool
	// Candidates are the clusters of the policy, in name order.
	Candidates []Candidate
	// Decision is the planner's choice among the candidates, for a
	// workload not placed yet; nil otherwise.
	Decision *placement.Decision
	// Remotes are the copies found on connected clusters, by cluster.
	Remotes map[string]Remote
	// Health of every cluster that holds a copy, is placed, or is known.
	Health map[string]Health
	// WorkerLostTimeout is how long a placed job's worker may be lost
	// before the job is dispatched again.
	WorkerLostTimeout time.Duration
}

// PassOver says why a worker is passed over for the job, and until when.
type PassOver struct {
	Reason string
	Until  time.Time
}

// Candidate is a cluster the policy allows.
type Candidate struct {
	Name string
	// Unusable says why the cluster cannot take the job now; empty if it can.
	Unusable string
	// Refuses says why the job, as it is, can never go there; empty if it
	// may. A job every candidate refuses is Rejected.
	Refuses string
}

// Remote is what one connected worker holds for the Workload.
type Remote struct {
	// Workload is Courier's copy, nil if there is none.
	Workload *kueue.Workload
	// HasJob: Courier's copy of the job exists.
	HasJob bool
	// JobMirrored: the manager job's status already equals the copy's.
	JobMirrored bool
	// FinalMirrored: Courier read the finished copy from the worker and
	// mirrored it onto the manager's job; no final sync is needed again.
	FinalMirrored bool
	// JobOutcome is how the job copy's status says it ended, if it did.
	JobOutcome adapter.Outcome
	// Stale: a copy of an earlier manager Workload of the same name is
	// there; it must go.
	Stale bool
	// OldJob: a job copy that is being deleted, or that was made for an
	// earlier admission or Workload, is still there, or, for a kind whose
	// copies go in the background, what ran the pods of a deleted one
	// (Remnant). Its pods may run until it is gone (Courier deletes job
	// copies in the foreground where it can), so the job goes to no other
	// worker before then.
	OldJob bool
	// Remnant: the job copy is gone, but what ran its pods is not; no
	// informer sees it go, so Courier looks again every remnantRecheck.
	// RemnantUnknown says why Courier cannot tell it went, if so.
	Remnant        bool
	RemnantUnknown string
	// Held says, for an old job copy or a Remnant that is being deleted,
	// which finalizers keep it there, and since when: one that no
	// controller removes keeps it, and the job, waiting for ever.
	Held string
	// Forward is what it takes to bring the manager job's changes to the
	// job copy, and to undo hand edits there; set only on the placed
	// worker, for a job that may be dispatched as it is.
	Forward *adapter.Forwarding
	// jobCopy is the job copy as the informer has it.
	jobCopy *unstructured.Unstructured
	// unseenJob: Courier created a job copy there that the informer has
	// not shown yet, and that still counts (stillUnseen; see observe).
	unseenJob bool
}

func (r Remote) holdsCopies() bool { return r.Workload != nil || r.HasJob || r.Stale || r.OldJob }

// finishedCopy is the informer's job copy if its status shows the job's
// end, and nil otherwise.
func (r Remote) finishedCopy() *unstructured.Unstructured {
	if r.HasJob && r.JobOutcome.Finished {
		return r.jobCopy
	}
	return nil
}

// Health is a worker's connection, as far as dispatch cares.
type Health struct {
	// Connected: Courier can read and write the worker now.
	Connected bool
	// LostSince is when the worker stopped being a place for work:
	// unreachable, refusing credentials after being Active, or its
	// WorkerCluster deleted. A zero time means lost since ever (no such
	// WorkerCluster). Nil while the worker is usable, and while a first
	// connection, or one to a worker never Active, is under way.
	LostSince *metav1.Time
	// LostReason is the event reason for giving up the worker's jobs, and
	// LostWhy the words that say why.
	LostReason, LostWhy string
}

// Placement is a recorded choice of worker for one admission of the
// Workload, identified by Kueue's eviction count when it was made.
type Placement struct {
	Cluster   string `json:"cluster"`
	Evictions int32  `json:"evictions"`
}

// Plan is what to do, in this order: mirror the job's status (a final
// mirror first of all: nothing else happens unless it succeeded), forward
// the job's changes, remote creates, the placement record, the job, remote
// deletes, then one status write on the manager Workload, then events.
type Plan struct {
	// FinalSync names the cluster whose final job status is mirrored onto
	// the manager's job, which must then show it: from FinalFrom, the
	// informer's copy, when that already shows the job's end, and
	// otherwise from a read of the worker itself, since the informer of
	// jobs may lag the one of Workloads.
	FinalSync string
	FinalFrom *unstructured.Unstructured
	// SyncJob names the cluster whose job status is mirrored from the
	// informer, if any.
	SyncJob string
	// ClearJobActivity removes the mirrored activity from the manager's
	// job once its copies are given up, so that Kueue can release its quota.
	ClearJobActivity bool
	// Delete lists clusters whose copies (Workload, job and what the job
	// needs) go.
	Delete []string
	// Create lists clusters that get a Workload copy.
	Create []string
	// Record is written to the manager Workload before the job is created.
	Record *Placement
	// ClearRecord removes a placement of an earlier admission whose copies
	// are known to be gone.
	ClearRecord bool
	// CreateJob names the cluster that gets the job, if any. The status
	// change is applied only once the job exists there. Unreached are the
	// workers out of reach when the plan was made: one of them back in
	// reach by then may hold an earlier copy of the job, and the job waits
	// for a plan that sees it.
	CreateJob string
	Unreached []string
	// Forward names the cluster whose job copy (ForwardBase, as read) gets
	// Forwarding.Update, and ForwardPriority the one whose Workload copy gets the manager
	// Workload's priority.
	Forward         string
	ForwardBase     *unstructured.Unstructured
	Forwarding      *adapter.Forwarding
	ForwardPriority string
	// JobEvents are recorded on the manager's job, once per version of it.
	JobEvents []Event
	// Status is the manager Workload's status change, nil for none.
	Status *StatusChange
	// Events are recorded after the status write.
	Events []Event
	// RemovedAs, if set, reports the removal of worker RemovedFrom's copies
	// instead of a RemoteDeleted event: the finish Kueue wrote before
	// Courier said it, once, with the pass that removes the placed copies.
	RemovedAs   *Event
	RemovedFrom string
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
	// Cluster is the worker the event is about, if any. Its WorkerCluster
	// is the event's related object, which keeps apart events of one reason
	// about different workers: the events API folds same-reason events on
	// one object into a series that keeps only the first note.
	Cluster string
}

// plan decides the next step for one manager Workload. The job is placed
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
func plan(o Observed) Plan {
	p := planFor(o)
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
	if cluster := livePlacement(o); cluster != "" {
		return planPlaced(o, cluster)
	}
	if o.Placement != nil {
		return planEarlierPlacement(o)
	}
	return planUnplaced(o)
}

// waitsForWorker reports whether the workload is admitted on the manager,
// not placed for this admission, and may be: only then does placement
// need the candidates.
func waitsForWorker(o Observed) bool {
	wl := o.Workload
	return isTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) && !isTrue(wl.Status.Conditions, kueue.WorkloadEvicted) &&
		!isTrue(wl.Status.Conditions, kueue.WorkloadFinished) && isActive(wl) && !o.JobMissing && livePlacement(o) == ""
}

// livePlacement returns the worker the job is placed on for the current
// admission, or "".
func livePlacement(o Observed) string {
	if p := o.Placement; p != nil && p.Evictions == o.Evictions {
		return p.Cluster
	}
	if o.Placement == nil && o.Workload.Status.ClusterName != nil {
		return *o.Workload.Status.ClusterName
	}
	return ""
}

// evictions is Kueue's count of a Workload's evictions, whatever their
// reason.
func evictions(wl *kueue.Workload) int32 {
	var n int32
	if s := wl.Status.SchedulingStats; s != nil {
		for _, e := range s.Evictions {
			n += e.Count
		}
	}
	return n
}
