package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// Observed is what the planner decides on: the manager Workload and what
// Courier found of it on the workers, all read from caches.
type Observed struct {
	Now      time.Time
	Workload *kueue.Workload
	// Behind: the cache shows a version of the Workload that Courier wrote
	// over; nothing else was observed, and the event of the newer version
	// brings the next pass.
	Behind bool
	// Disowned: the Workload is not (or no longer) Courier's, and Courier
	// runs nothing of it: copies of its name belong to an earlier Workload,
	// or were nominated before its check went.
	Disowned bool
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
	// JobBehind: the cache shows the manager's job as it was before Courier
	// mirrored its end; a plan now could dispatch it again.
	JobBehind bool
	// Rejection says why the job must not be dispatched, if so.
	Rejection string
	// Misconfigured says why nothing may be dispatched for now, if so.
	Misconfigured string
	// Placement is the worker Courier recorded for the job, nil if none.
	Placement *workload.Placement
	// Moves are the times workers' evictions sent the job elsewhere.
	Moves []workload.Move
	// Evictions is how many times Kueue has evicted the Workload; a
	// placement recorded at a lower count belongs to an earlier admission.
	Evictions int32
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
	// PlacementInput is what the placement planner decides on, for a
	// workload not placed yet that has candidates; nil otherwise.
	PlacementInput *placement.Input
	// Decision is the planner's choice among the candidates; Decide sets
	// it from PlacementInput.
	Decision *placement.Decision
	// Remotes are the copies found on connected clusters, by cluster.
	Remotes map[string]Remote
	// Health of every cluster that holds a copy, is placed, or is known.
	Health map[string]Health
	// WorkerLostTimeout is how long a placed job's worker may be lost
	// before the job is dispatched again, as its policy allows.
	WorkerLostTimeout time.Duration
	// KueueFinishGrace is how long Courier leaves the Workload of a job
	// whose end it mirrored to the manager for the manager's Kueue, which
	// finishes it from that status as it does any job's, before it writes
	// Finished itself (kueueFinishesIn).
	KueueFinishGrace time.Duration
	// NothingWaitsForQuota: no Workload on the manager waits for the quota
	// this one holds, so once the grace ran out Courier leaves finishing
	// it to the manager's Kueue, however late, and looks again later
	// (finishRecheck). Set only once a copy of the job has ended.
	NothingWaitsForQuota bool
	// SelfFault says why Courier takes the workers out of its reach for a
	// fault of its own, "" if it does not: then no job moves.
	SelfFault string
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
	// JobMirrored: the manager job's status already equals the copy's, or
	// the copy shows nothing worth a write yet: its worker's Kueue has not
	// resumed it.
	JobMirrored bool
	// MirrorIn is how long the copy's changed status waits before it is
	// mirrored, when the job runs: 0 for at once.
	MirrorIn time.Duration
	// FinalMirroredAt is when Courier read the finished copy from the
	// worker and mirrored it onto the manager's job, zero if it has not: no
	// final sync is needed again (finalMirrored).
	FinalMirroredAt time.Time
	// JobOutcome is how the job copy's status says it ended, if it did.
	JobOutcome adapter.Outcome
	// EarlierEnd is how a job copy an earlier admission of this Workload
	// left there ended, if it did: it ran to its end before the manager's
	// eviction, deactivation or preemption reached it. JobCopy is then that
	// copy, and FinalMirroredAt says whether its status is on the manager.
	EarlierEnd *adapter.Outcome
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
	// JobCopy is the job copy as the informer has it.
	JobCopy *unstructured.Unstructured
	// UnseenJob: Courier created a job copy there that the informer has
	// not shown yet, and that still counts as there.
	UnseenJob bool
	// UnseenWorkload: the same, of a Workload copy.
	UnseenWorkload bool
	// GateOpened is when Courier opened its preemption gate on the
	// Workload copy, while the informer does not show it open yet.
	GateOpened *metav1.Time
}

// finalMirrored reports whether the finished copy's status is on the
// manager's job.
func (r Remote) finalMirrored() bool { return !r.FinalMirroredAt.IsZero() }

func (r Remote) holdsCopies() bool { return r.Workload != nil || r.HasJob || r.Stale || r.OldJob }

// finishedCopy is the informer's job copy if its status shows the job's
// end, and nil otherwise.
func (r Remote) finishedCopy() *unstructured.Unstructured {
	if r.HasJob && r.JobOutcome.Finished {
		return r.JobCopy
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
	// Policy is what becomes of the worker's jobs once it is lost.
	Policy courier.LostWorkerPolicy
	// FenceAnswered: a fence answered there when Courier last reached it.
	FenceAnswered bool
	// MovableAt is, under the Fenced policy, when the worker's fence must
	// have stopped its jobs: a margin after Courier revoked it; nil until
	// then.
	MovableAt *metav1.Time
}
