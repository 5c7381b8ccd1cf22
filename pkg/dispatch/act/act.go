// Package act is the last step of a dispatch pass: it carries out a
// plan.Plan as an ordered list of small steps (see steps), each of which
// writes one kind of thing: the expectations the observation settled, the
// job's status mirrored from its worker, changes forwarded to the copies,
// Workload copies, the placement record, the job, deletes, and last the
// one status write on the manager Workload. A step runs only if the ones
// before it succeeded, so that the final job status is on the manager
// before the Workload finishes or any copy goes, the placement is recorded
// before the job exists anywhere, and no copy is deleted for a decision
// the manager refused. Events are recorded once, when the pass ends.
package act

import (
	"context"
	"errors"

	"github.com/courierdev/courier/pkg/dispatch/plan"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// steps are a pass's steps, in the order they run.
var steps = []step{
	{"settling expectations", settle},
	{"mirroring the final job status", mirrorFinalStatus},
	{"mirroring the job status", mirrorStatus},
	{"forwarding job changes", forwardJobChanges},
	{"forwarding the priority", forwardPriorityChange},
	{"clearing the job's activity", clearJobActivity},
	{"creating Workload copies", createCopies},
	{"opening a preemption gate", openPreemptionGate},
	{"recording the placement", recordPlacement},
	{"creating the job", createTheJob},
	{"recording the moves", recordMoves},
	{"deleting copies", deleteCopiesStep},
	{"writing the status", writeStatusStep},
}

// Act carries out in.Plan and records its events.
func (a *Actor) Act(ctx context.Context, in Input) (reconcile.Result, error) {
	p := &pass{
		Input:  in,
		wl:     in.Observed.Workload,
		result: reconcile.Result{RequeueAfter: in.Plan.RequeueAfter},
		status: in.Plan.Status,
		events: in.Plan.Events,
		out:    outcomeOf(in.Observed, in.Plan),
	}
	if in.Plan.RemoveEverywhere {
		a.Expectations.Settle(in.Seen, a.Now())
		return a.RemoveEverywhere(ctx, p.wl.Namespace, p.wl.Name)
	}
	var err error
	completed := true
	for _, s := range steps {
		var done bool
		if done, err = s.run(ctx, a, p); done || err != nil {
			completed = false
			break
		}
	}
	a.report(p, completed)
	if err = errors.Join(err, p.failed); err != nil {
		return reconcile.Result{}, err
	}
	p.result.RequeueAfter = plan.Soonest(p.result.RequeueAfter, in.Plan.Recheck)
	return p.result, nil
}

// report records the pass's events, once: on the manager's job, and on the
// Workload all of them if the pass ran to its end, what it did otherwise.
func (a *Actor) report(p *pass, completed bool) {
	a.recordOnJob(p.Job, p.jobEvents)
	if completed || p.reportAll {
		a.record(p.wl, p.events)
		return
	}
	a.record(p.wl, p.acted)
}
