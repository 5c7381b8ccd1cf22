package plan

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// The reasons of moves no eviction condition names.
const (
	moveCopyGone  = "CopyGone"
	moveFenced    = "Fenced"
	moveQuotaLost = "QuotaLost"
)

// movedOff sends the job back to Kueue after worker c evicted or lost it
// for reason, and records the move, which the policy's maxMoves counts.
func movedOff(o Observed, p Plan, c, reason, msg string) Plan {
	if !o.HasCheck {
		return p
	}
	p.RecordMoves = workload.WithMove(o.Moves, workload.Move{Cluster: c, Reason: reason, At: metav1.NewTime(o.Now)})
	// The job's owner reads the job, not its Workload.
	p.JobEvents = append(p.JobEvents, Event{Type: "Warning", Reason: courier.EventRemoteEvicted, Message: msg})
	return retryElsewhere(o, p, courier.EventRemoteEvicted, msg)
}

// movesExhausted is the plan for a workload that workers evicted more
// than its policy's maxMoves times for one reason, and ok false for any
// other: Rejected, or pending and sent nowhere, as the policy says, with
// each worker's reason.
func movesExhausted(o Observed) (Plan, bool) {
	if o.PlacementInput == nil || len(o.Moves) == 0 {
		return Plan{}, false
	}
	pol := o.PlacementInput.Policy
	reason := workload.Exhausted(o.Moves, pol.MaxMoves)
	if reason == "" {
		return Plan{}, false
	}
	msg := Truncate(fmt.Sprintf("Workers evicted the workload for %s more than the policy's maxMoves (%d) times: %s.",
		reason, pol.MaxMoves, workload.DescribeMoves(o.Moves)), MaxNoteLength)
	if pol.OnMovesExhausted == courier.WaitWhenMovesExhausted {
		p := pending(o, msg+" It waits, sent nowhere, until the annotation "+courier.MovesAnnotation+" is removed from it.", nil,
			Event{Type: "Warning", Reason: courier.EventMovesExhausted, Message: msg})
		p.Delete = withCopies(o.Remotes, "")
		return p, true
	}
	return endAttempt(o, kueue.CheckStateRejected, courier.EventMovesExhausted, msg), true
}
