package plan

import (
	"fmt"
	"time"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// lostFate is what becomes of the jobs of worker c, which is lost: whether
// they move now; if not, when to look again (0: when something changes),
// and, when they stay for good, the note that says why.
//
//   - Within workerLostTimeout nothing moves, under any policy.
//   - A worker Courier reaches, whose WorkerCluster is being deleted, has
//     its copies removed by Courier itself: its jobs move.
//   - A fault of Courier's own (SelfFault) moves nothing.
//   - Never moves nothing; Fenced moves only on a worker whose fence
//     answered, once Courier revoked it and the fence's margin is over
//     (MovableAt); Timeout moves.
func lostFate(o Observed, c string) (move bool, recheck time.Duration, keep string) {
	h := o.Health[c]
	if h.LostSince == nil {
		return false, 0, ""
	}
	if h.Policy != courier.LostWorkerFenced || h.Connected {
		if lostFor := o.Now.Sub(h.LostSince.Time); lostFor < o.WorkerLostTimeout {
			return false, o.WorkerLostTimeout - lostFor, ""
		}
	}
	switch {
	case h.Connected:
		return true, 0, ""
	case o.SelfFault != "":
		return false, 0, fmt.Sprintf("Worker %q %s; %s.", c, h.LostWhy, o.SelfFault)
	case h.Policy == courier.LostWorkerNever:
		return false, 0, fmt.Sprintf("Worker %q %s; its lostWorkerPolicy is Never: the job stays there, and goes on when the worker is back.", c, h.LostWhy)
	case h.Policy == courier.LostWorkerFenced && !h.FenceAnswered:
		return false, 0, fmt.Sprintf("Worker %q %s; no fence answered there, so under the Fenced policy the job stays, and goes on when the worker is back.", c, h.LostWhy)
	case h.Policy == courier.LostWorkerFenced && h.MovableAt == nil:
		// Courier has not given the worker up yet; the revocation, a
		// WorkerCluster change, brings the next pass.
		return false, 0, ""
	case h.Policy == courier.LostWorkerFenced && o.Now.Before(h.MovableAt.Time):
		return false, h.MovableAt.Sub(o.Now), ""
	}
	return true, 0, ""
}

// movedWhy is the message of a lost worker's job sent back to Kueue.
func movedWhy(o Observed, c string) string {
	h := o.Health[c]
	if h.Policy == courier.LostWorkerFenced && !h.Connected {
		return fmt.Sprintf("Worker %q %s; Courier gave it up and its fence must have stopped the job by %s; dispatching the workload again.",
			c, h.LostWhy, h.MovableAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("Worker %q %s, for longer than workerLostTimeout (%s); dispatching the workload again.", c, h.LostWhy, o.WorkerLostTimeout)
}
