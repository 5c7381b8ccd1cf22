package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// planFinished: the final job status is mirrored from the placed worker
// before its copies go (a final sync, unless the manager's job already
// shows what the worker's copy holds), and every other copy goes. A check
// still Pending turns Ready, so that none is left Pending on a finished
// Workload.
func planFinished(o Observed) Plan {
	wl := o.Workload
	placed := ""
	if o.Placement != nil {
		placed = o.Placement.Cluster
	} else if wl.Status.ClusterName != nil {
		placed = *wl.Status.ClusterName
	}
	// Removing a finished job's copies is routine, and each event is a
	// write to the manager: none reports it.
	p := Plan{Delete: withCopies(o.Remotes, ""), QuietRemoval: true}
	if r := o.Remotes[placed]; r.HasJob && !r.JobMirrored && !r.finalMirrored() {
		p.FinalSync, p.FinalFrom = placed, r.finishedCopy()
	}
	if o.HasCheck && o.Check.State == kueue.CheckStatePending {
		p.Status = &StatusChange{State: kueue.CheckStateReady, Message: "The workload finished.", ClusterName: wl.Status.ClusterName}
	}
	return p
}

// planEnded: the manager evicted or deactivated the Workload, released its
// quota, or deleted its job. Every copy Courier can reach goes; those on a
// worker out of reach stay recorded in the placement, so that the job is
// not dispatched again before they are gone or their worker is lost.
func planEnded(o Observed) Plan {
	if p, ended := planEndedFirst(o); ended {
		return p
	}
	wl := o.Workload
	p := Plan{Delete: withCopies(o.Remotes, ""), ClearJobActivity: !o.JobMissing}
	if o.HasCheck && (len(wl.Status.NominatedClusterNames) > 0 || wl.Status.ClusterName != nil) {
		p.Status = &StatusChange{State: o.Check.State, Message: o.Check.Message}
	}
	// Once the placed worker is known to hold nothing more, the record has
	// nothing left to guard; a worker can then be drained without waiting
	// for this Workload to be admitted again.
	p.ClearRecord = o.Placement != nil && copiesGone(o, o.Placement.Cluster)
	return p
}

// planJobEnded: the manager's job shows its end, which Courier mirrored
// from a worker's copy, and Kueue has not finished the Workload yet:
// Courier's own write of Finished was refused, or the end came from a copy
// an earlier placement left on a worker that was counted lost and came
// back. The end stands: nothing is dispatched again, and no other copy's
// status is mirrored onto it, which the job's API would refuse for ever.
// The placed worker's ended copy carries the placement through as usual;
// otherwise the Workload finishes with the job's outcome, and every copy
// goes, stopping a run that should not be.
func planJobEnded(o Observed) Plan {
	wl := o.Workload
	if c := LivePlacement(o); c != "" && endedOn(o.Remotes[c]) {
		return planPlaced(o, c)
	}
	fin := outcomeCondition(o.JobEnd, "The job ended.")
	msg := "The job's status on the manager shows its end; the workload is not dispatched again."
	p := Plan{Delete: withCopies(o.Remotes, ""),
		Status: &StatusChange{State: kueue.CheckStateReady, Message: msg, ClusterName: wl.Status.ClusterName, Finished: fin},
		Events: []Event{{Type: "Normal", Reason: courier.EventFinished, Message: msg + " " + fin.Message}}}
	if !o.HasCheck {
		p.Status.State, p.Status.Message = "", ""
	}
	return p
}

// planPlaced carries a placement on worker c through: copies elsewhere go;
// the job is created on c if missing and its status mirrored; the check is
// Ready naming c; the Workload finishes when c's copy does, after the final
// job status is on the manager. Changes made on the manager since dispatch
// are forwarded, and hand edits on c set back, where c's API allows; the
// rest is reported on the manager's job. It goes Retry when c evicts the workload or
// loses its copy before the job ended there, or when c has been lost for
// workerLostTimeout. A job that
// changed after dispatch, or whose AdmissionCheck is gone, is reported on,
// never stopped.
func planPlaced(o Observed, c string) Plan {
	p := Plan{Delete: withCopies(o.Remotes, c)}
	h, r := o.Health[c], o.Remotes[c]
	move, recheck, keep := lostFate(o, c)
	if move {
		return retryElsewhere(o, p, h.LostReason, movedWhy(o, c))
	}
	p.RequeueAfter = recheck
	switch {
	case !h.Connected && keep != "":
		return keepOnLostWorker(o, p, c, keep)
	case !h.Connected:
		// The worker may well be running the job: wait for it, or for its
		// policy to move it.
		return p
	case refusedBeforeRunning(o, c, r):
		// Choose again at once, passing that worker over, rather than
		// through Kueue's requeue and its backoff.
		p.ClearRecord = true
		return p
	case r.Workload == nil && !(r.HasJob && r.JobOutcome.Finished):
		return movedOff(o, p, c, moveCopyGone, fmt.Sprintf("The workload's copy on worker %q is gone; dispatching the workload again.", c))
	}
	if fin := placedEnd(r); fin != nil {
		return planPlacedEnd(o, p, c, fin)
	}
	if reason, why := leftWorker(r, c); why != "" {
		return movedOff(o, p, c, reason, why)
	}
	if old := oldJobOn(o, c); old != "" && !r.HasJob {
		// A worker out of reach when c was chosen came back before the job
		// was created there: its earlier copy goes first, as it would have
		// before the choice.
		if msg := waitingForOldJob(o, old); o.HasCheck && o.Check.State != kueue.CheckStateReady && o.Check.Message != msg {
			p.Status = &StatusChange{State: o.Check.State, Message: msg,
				ClusterName: o.Workload.Status.ClusterName, Nominated: o.Workload.Status.NominatedClusterNames}
		}
		return p
	}
	return planRunning(o, p, c)
}

// placedEnd is the True Finished condition the placed worker's copies
// show, or nil while the job has not ended there.
func placedEnd(r Remote) *metav1.Condition {
	var fin *metav1.Condition
	switch {
	case r.Workload == nil:
		// The worker removed a finished Workload (its Kueue's retention
		// policy, say); the job copy still says how it ended.
		fin = outcomeCondition(r.JobOutcome, copyEndedMsg)
	default:
		fin = findCondition(r.Workload.Status.Conditions, kueue.WorkloadFinished)
		if (fin == nil || fin.Status != metav1.ConditionTrue) && r.HasJob && r.JobOutcome.Finished && leaving(r.Workload) {
			// The job ended before the worker's Kueue finished its
			// Workload: an eviction that lands meanwhile (a deactivation,
			// a preemption) must not run it again elsewhere. Otherwise the
			// worker's Finished, with its reason, is awaited.
			fin = outcomeCondition(r.JobOutcome, copyEndedMsg)
		}
	}
	if fin == nil || fin.Status != metav1.ConditionTrue {
		return nil
	}
	return fin
}

// planPlacedEnd finishes the Workload as its placed worker c did, after
// the final job status is on the manager; an end that means the job did
// not run to its end sends it elsewhere.
func planPlacedEnd(o Observed, p Plan, c string, fin *metav1.Condition) Plan {
	switch fin.Reason {
	case kueue.WorkloadFinishedReasonOutOfSync:
		return movedOff(o, p, c, fin.Reason, fmt.Sprintf("Worker %q found its job out of sync with the workload: %s; dispatching the workload again.", c, fin.Message))
	case kueue.WorkloadFinishedReasonOwnerNotFound:
		// The worker's Kueue ends a Workload whose job is gone; Courier
		// removes copies only once the manager's job ended, so someone
		// else deleted it before it finished: it did not run to its end.
		return movedOff(o, p, c, fin.Reason, fmt.Sprintf("The job's copy on worker %q was deleted before it finished (%s); dispatching the workload again.", c, fin.Message))
	}
	// The final status is read from the worker even when the job copy is
	// not in the cache (its informer may lag the Workload's): the Workload
	// finishes only after it is on the manager, or the copy is known gone.
	r := o.Remotes[c]
	if !r.finalMirrored() {
		p.FinalSync, p.FinalFrom = c, r.finishedCopy()
	}
	if wait := kueueFinishesIn(o, r); wait > 0 {
		p.RequeueAfter = Soonest(p.RequeueAfter, wait)
		return p
	}
	msg := finishedOn(c)
	p.Status = &StatusChange{
		State: kueue.CheckStateReady, Message: msg, ClusterName: &c,
		Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: fin.Reason, Message: fin.Message},
	}
	if !o.HasCheck {
		p.Status.State, p.Status.Message = "", ""
	}
	// Where the manager's Kueue would have finished the Workload too, and
	// was only slow to, as it is under a burst, the Finished condition
	// tells it all: an event would be one more write to the manager.
	if !kueueFinishes(o, r) {
		p.Events = append(p.Events, Event{Type: "Normal", Reason: courier.EventFinished, Message: msg + " " + fin.Message})
	}
	return p
}

// kueueFinishesIn is how long the placed worker's end waits for the
// manager's Kueue to finish the Workload, from the job status mirrored
// with the final sync: the copy must show the job's end, the check be
// Ready (a Workload not admitted yet is no job Kueue follows), and the
// Workload not be ending on the manager (evicted, deactivated, its quota
// released, being deleted), where the job's end must be written before
// anything else is. 0 when Courier writes Finished now, also once
// o.KueueFinishGrace ran out while another Workload waits for the quota.
// Writing it at once whenever Kueue would costs the manager a status
// write per job, and often a conflict with Kueue's own.
func kueueFinishesIn(o Observed, r Remote) time.Duration {
	if !kueueFinishes(o, r) {
		return 0
	}
	if !r.finalMirrored() {
		return o.KueueFinishGrace
	}
	left := max(r.FinalMirroredAt.Add(o.KueueFinishGrace).Sub(o.Now), 0)
	if left == 0 && o.NothingWaitsForQuota {
		// Releasing the quota sooner admits nothing. A ClusterQueue that
		// comes to want it queues the Workload (dispatch's quotaEvents);
		// the long look is only a bound on what a lost event costs.
		return max(finishBackstop, o.KueueFinishGrace)
	}
	return left
}

// finishBackstop is when to look again at a Workload whose job ended, left
// to the manager's Kueue to finish while nothing waits for its quota.
// Something coming to wait for it queues the Workload at once; a look per
// grace would cost a saturated Kueue's backlog a pass per ended job per
// grace that does nothing.
const finishBackstop = 5 * time.Minute

// kueueFinishes reports whether the manager's Kueue finishes the Workload
// from the job status mirrored from r (see kueueFinishesIn).
func kueueFinishes(o Observed, r Remote) bool {
	wl := o.Workload
	return r.HasJob && r.JobOutcome.Finished && o.HasCheck && o.Check.State == kueue.CheckStateReady && !leaving(wl) && isActive(wl)
}

// leftWorker says why the job no longer runs on worker c, whose copies
// have not ended it, in a word (the move's reason) and in a sentence, or
// "": the Workload copy is being deleted, was stopped by the worker's
// fence or evicted, or the job copy is being deleted.
func leftWorker(r Remote, c string) (reason, why string) {
	switch {
	case r.Workload.DeletionTimestamp != nil:
		return moveCopyGone, fmt.Sprintf("The workload's copy on worker %q is being deleted; dispatching the workload again.", c)
	case r.Workload.Annotations[courier.FencedAnnotation] != "" && !isActive(r.Workload):
		// Its pods are stopping or stopped: resuming the copy would start
		// the job from scratch there as much as anywhere, so Kueue
		// chooses again, with the copy deleted first.
		return moveFenced, fmt.Sprintf("Worker %q's fence stopped the workload's copy at %s, when Courier's heartbeat there had stopped; dispatching the workload again.",
			c, r.Workload.Annotations[courier.FencedAnnotation])
	case leaving(r.Workload):
		ev := findCondition(r.Workload.Status.Conditions, kueue.WorkloadEvicted)
		reason, why := moveQuotaLost, "it lost its quota reservation"
		if ev != nil && ev.Status == metav1.ConditionTrue {
			reason, why = ev.Reason, fmt.Sprintf("%s: %s", ev.Reason, ev.Message)
		}
		return reason, fmt.Sprintf("Worker %q evicted the workload (%s); dispatching the workload again.", c, why)
	case r.OldJob && !r.HasJob:
		return moveCopyGone, fmt.Sprintf("The job's copy on worker %q is being deleted; dispatching the workload again once it is gone.", c)
	}
	return "", ""
}

// planRunning carries a job running on worker c on: the job is created
// there if missing and its status mirrored; the manager's changes go to
// the copy where the worker's API allows, and what cannot go is reported
// on the manager's job; the check is Ready, naming c.
func planRunning(o Observed, p Plan, c string) Plan {
	wl, r := o.Workload, o.Remotes[c]
	switch {
	case !r.HasJob && r.UnseenJob:
		// Created moments ago, not shown by the informer yet: its event
		// brings the next pass, and the requeue is for a copy gone before
		// it showed.
		p.RequeueAfter = Soonest(p.RequeueAfter, unseenCopyRecheck)
	case !r.HasJob:
		p.CreateJob = c
	case !r.JobMirrored && r.MirrorIn > 0:
		p.RequeueAfter = Soonest(p.RequeueAfter, r.MirrorIn)
	case !r.JobMirrored:
		p.SyncJob = c
	}
	if r.HasJob && r.Forward != nil {
		if r.Forward.Update != nil {
			p.Forward, p.ForwardBase, p.Forwarding = c, r.JobCopy, r.Forward
		}
		p.JobEvents = refusalEvents(c, r.Forward)
	}
	if !samePriority(wl, r.Workload) {
		p.ForwardPriority = c
	}
	if !o.HasCheck {
		return p
	}
	msg := fmt.Sprintf("Dispatched to worker %q, whose Kueue admitted the workload.", c)
	var events []Event
	for _, n := range placedNotes(o) {
		msg += " " + n.Message
		if !strings.Contains(o.Check.Message, n.Message) {
			events = append(events, n)
		}
	}
	if o.Check.State != kueue.CheckStateReady {
		events = append([]Event{{Type: "Normal", Reason: courier.EventDispatched, Message: fmt.Sprintf("Dispatched to worker %q.", c)}}, events...)
	}
	if o.Check.State != kueue.CheckStateReady || o.Check.Message != msg || ptr.Deref(wl.Status.ClusterName, "") != c {
		p.Status = &StatusChange{State: kueue.CheckStateReady, Message: msg, ClusterName: &c}
		p.Events = append(p.Events, events...)
	}
	return p
}

// planEarlierPlacement: the Workload was evicted and admitted again since
// Courier placed it. The earlier copies must be gone before the job goes
// anywhere: removed where Courier can reach them, or left to the lost-
// worker policy when their worker has been lost for workerLostTimeout.
func planEarlierPlacement(o Observed) Plan {
	if p, ended := planEndedFirst(o); ended {
		return p
	}
	c := o.Placement.Cluster
	h := o.Health[c]
	switch {
	case copiesGone(o, c):
		p := planUnplaced(o)
		p.ClearRecord = p.Record == nil
		return p
	case h.Connected:
		p := pending(o, fmt.Sprintf("Removing the copies an earlier admission left on worker %q before dispatching again.", c)+heldNote(o.Remotes[c]), nil)
		p.Delete = withCopies(o.Remotes, "")
		return p
	}
	msg := fmt.Sprintf("Worker %q held this workload before it was evicted and is out of reach; it may still run the job, so nothing is dispatched until it is back or counts as lost.", c)
	p := pending(o, msg, nil, Event{Type: "Warning", Reason: courier.EventWaitingForWorker, Message: msg})
	p.Delete = withCopies(o.Remotes, "")
	_, p.RequeueAfter, _ = lostFate(o, c)
	return p
}

// refusedBeforeRunning reports whether the worker the job is placed on
// refused to create it (a same-name object Courier does not own, the
// worker's refusal, or a server error of its own), so that Courier removed
// the copies there, before the check ever turned Ready: the job never ran,
// and the placement guards nothing. planUnplaced still waits for any job
// copy that is going.
func refusedBeforeRunning(o Observed, c string, r Remote) bool {
	return o.PassedOver[c].Reason != "" && o.HasCheck && o.Check.State == kueue.CheckStatePending &&
		!r.HasJob && (r.Workload == nil || r.Workload.DeletionTimestamp != nil)
}

// planEndedFirst finishes a Workload whose job ran to its end on its
// worker before the manager's eviction, deactivation or preemption reached
// it: its final status is mirrored and the Workload finished with its
// outcome, so that a job that completed is not run again from scratch.
// ended is false when the job did not end there.
func planEndedFirst(o Observed) (Plan, bool) {
	if o.JobEnd.Finished {
		// Its end is on the manager already, and stands (planJobEnded).
		return Plan{}, false
	}
	if c := LivePlacement(o); c != "" && o.Health[c].Connected {
		r := o.Remotes[c]
		fin := placedEnd(r)
		if fin == nil && r.HasJob && r.JobOutcome.Finished {
			// The job's end, not yet its Workload's, which the manager's
			// end may now never let come.
			fin = outcomeCondition(r.JobOutcome, copyEndedMsg)
		}
		if fin != nil && r.HasJob {
			return planPlacedEnd(o, Plan{Delete: withCopies(o.Remotes, c)}, c, fin), true
		}
	}
	if o.Placement == nil || !o.Health[o.Placement.Cluster].Connected {
		return Plan{}, false
	}
	c := o.Placement.Cluster
	r := o.Remotes[c]
	if r.EarlierEnd == nil {
		return Plan{}, false
	}
	fin := outcomeCondition(*r.EarlierEnd, copyEndedMsg)
	msg := finishedOn(c)
	// The copies there go once the Workload finished (planFinished).
	p := Plan{
		Delete: slices.DeleteFunc(withCopies(o.Remotes, c), func(name string) bool { return name == c }),
		Status: &StatusChange{State: kueue.CheckStateReady, Message: msg, ClusterName: &c, Finished: fin},
		Events: []Event{{Type: "Normal", Reason: courier.EventFinished, Message: msg + " " + fin.Message}},
	}
	if !r.finalMirrored() {
		p.FinalSync, p.FinalFrom = c, r.JobCopy
	}
	if !o.HasCheck {
		p.Status.State, p.Status.Message = "", ""
	}
	return p, true
}
