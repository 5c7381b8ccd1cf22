package plan

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
)

// The outcomes plans share, each with the words it puts on the check and in
// events: wait, give the worker up, end the attempt, remove copies.

// finishedOn is the check message, and the start of the Finished event,
// of a Workload that finished on worker c.
func finishedOn(c string) string { return fmt.Sprintf("The workload finished on worker %q.", c) }

// retryElsewhere gives the placed worker up: the check goes Retry, so that
// Kueue evicts the workload and Courier dispatches it again. Without a
// check Courier can write there is nothing to say it on.
func retryElsewhere(o Observed, p Plan, reason, msg string) Plan {
	if !o.HasCheck {
		return p
	}
	wl := o.Workload
	p.Status = &StatusChange{State: kueue.CheckStateRetry, Message: msg,
		ClusterName: wl.Status.ClusterName, Nominated: wl.Status.NominatedClusterNames}
	p.Events = append(p.Events, Event{Type: "Warning", Reason: reason, Message: msg})
	return p
}

// copyEndedMsg is the Finished message of a job copy whose ending says
// nothing, its Workload on the worker gone.
const copyEndedMsg = "The job ended; its Workload on the worker was removed."

// outcomeCondition is the Finished condition a job's own ending gives,
// with message when the ending says nothing.
func outcomeCondition(out adapter.Outcome, message string) *metav1.Condition {
	c := &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: out.Message}
	if out.Failed {
		c.Reason = kueue.WorkloadFinishedReasonFailed
	}
	if c.Message == "" {
		c.Message = message
	}
	return c
}

// placedNotes are what the check message of a placed workload reports
// besides where it runs, each with the event that announces it.
func placedNotes(o Observed) []Event {
	var notes []Event
	if o.Rejection != "" {
		notes = append(notes, Event{Type: "Warning", Reason: courier.EventNotForwarded,
			Message: truncate("The job changed after dispatch in a way its worker would refuse; the running copy is kept as it was: "+o.Rejection, maxNoteLength)})
	}
	if o.CheckMissing != "" {
		notes = append(notes, Event{Type: "Warning", Reason: courier.EventCheckMissing, Message: o.CheckMissing})
	}
	return notes
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

// maxNoteLength bounds what a check message repeats of a longer text; the
// event carries the same words.
const maxNoteLength = 1024

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// heldNote is what a waiting message adds about an old job copy, or the
// remnant of a deleted one, that finalizers hold, or "".
func heldNote(r Remote) string {
	if r.Held == "" {
		return ""
	}
	return " " + r.Held + "; if no controller on the worker removes them, remove them there by hand."
}

// waitingForOldJob is the check message while worker c deletes an earlier
// copy of the job.
func waitingForOldJob(o Observed, c string) string {
	if why := o.Remotes[c].RemnantUnknown; why != "" {
		return fmt.Sprintf("Waiting for worker %q to delete what ran an earlier copy of the job before dispatching again: %s.", c, why)
	}
	return fmt.Sprintf("Waiting for worker %q to delete an earlier copy of the job and its pods before dispatching again.", c) + heldNote(o.Remotes[c])
}

// endAttempt ends this dispatch attempt: every copy goes and the check turns
// Rejected or Retry, with a warning saying why. Without a check Courier can
// write there is nothing to say it on, and nothing is done.
func endAttempt(o Observed, state kueue.CheckState, reason, msg string) Plan {
	if !o.HasCheck {
		return Plan{}
	}
	return Plan{
		Delete: withCopies(o.Remotes, ""),
		Status: &StatusChange{State: state, Message: msg},
		Events: []Event{{Type: "Warning", Reason: reason, Message: msg}},
	}
}

// soonest is the shorter of the durations that are set.
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// pending keeps the check Pending with msg and the nomination, writing
// only what changed.
func pending(o Observed, msg string, nominated []string, events ...Event) Plan {
	if !o.HasCheck || (o.Check.State == kueue.CheckStatePending && o.Check.Message == msg && slices.Equal(o.Workload.Status.NominatedClusterNames, nominated)) {
		return Plan{}
	}
	return Plan{
		Status: &StatusChange{State: kueue.CheckStatePending, Message: msg, Nominated: nominated},
		Events: events,
	}
}

// samePriority reports whether a Workload copy has the manager Workload's
// priority.
func samePriority(wl, copy *kueue.Workload) bool {
	return equality.Semantic.DeepEqual(wl.Spec.Priority, copy.Spec.Priority) &&
		equality.Semantic.DeepEqual(wl.Spec.PriorityClassRef, copy.Spec.PriorityClassRef)
}

// refusalEvents are the events that report what a Forwarding leaves.
func refusalEvents(c string, f *adapter.Forwarding) []Event {
	var out []Event
	for _, r := range f.Refused {
		reason, msg := courier.EventNotForwarded, fmt.Sprintf("Not forwarded to worker %q: %s", c, r.Message())
		if r.Edited {
			reason, msg = courier.EventRemoteEdited, fmt.Sprintf("The copy on worker %q has %s", c, r.Message())
		}
		out = append(out, Event{Type: "Warning", Reason: reason, Message: truncate(msg, maxNoteLength)})
	}
	return out
}

// keepOnLostWorker leaves a job on its lost worker c, where its policy
// keeps it: the check says why, once, with the event that announces it.
func keepOnLostWorker(o Observed, p Plan, c, note string) Plan {
	if !o.HasCheck {
		return p
	}
	msg := fmt.Sprintf("Dispatched to worker %q, whose Kueue admitted the workload. %s", c, note)
	if o.Check.Message == msg {
		return p
	}
	wl := o.Workload
	p.Status = &StatusChange{State: o.Check.State, Message: msg, ClusterName: wl.Status.ClusterName, Nominated: wl.Status.NominatedClusterNames}
	p.Events = append(p.Events, Event{Type: "Warning", Reason: courier.EventKeptOnLostWorker, Message: note, Cluster: c})
	return p
}
