package act

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
)

// settle records what the observation saw that settles expectations.
func settle(_ context.Context, a *Actor, p *pass) (bool, error) {
	a.Expectations.Settle(p.Seen, a.Now())
	return false, nil
}

// mirrorFinalStatus puts the job's final status on the manager before
// anything else happens.
func mirrorFinalStatus(ctx context.Context, a *Actor, p *pass) (bool, error) {
	c := p.Plan.FinalSync
	if c == "" {
		return false, nil
	}
	if err := a.finalSync(ctx, c, p.wl, p.Job, p.Plan.FinalFrom); err != nil {
		return true, fmt.Errorf("mirroring the final job status from %s: %w", c, err)
	}
	return false, nil
}

func mirrorStatus(ctx context.Context, a *Actor, p *pass) (bool, error) {
	c := p.Plan.SyncJob
	if c == "" {
		return false, nil
	}
	if err := a.syncJob(ctx, c, p.wl, p.Job); err != nil {
		return true, fmt.Errorf("mirroring job status from %s: %w", c, err)
	}
	return false, nil
}

// forwardJobChanges writes the manager job's changes to its copy; what
// cannot go, and what went, is reported on the manager's job.
func forwardJobChanges(ctx context.Context, a *Actor, p *pass) (bool, error) {
	p.jobEvents = p.Plan.JobEvents
	c := p.Plan.Forward
	if c == "" {
		return false, nil
	}
	evs, retry, err := a.forwardJob(ctx, c, p.Job, p.Plan.ForwardBase, p.Plan.Forwarding)
	if err != nil {
		return true, fmt.Errorf("forwarding job changes to %s: %w", c, err)
	}
	p.jobEvents = append(p.jobEvents, evs...)
	if retry {
		// The copy changed meanwhile: the next pass compares again and
		// reports all it finds in one event per reason.
		p.jobEvents, p.result.RequeueAfter = nil, requeueSoon
	}
	return false, nil
}

func forwardPriorityChange(ctx context.Context, a *Actor, p *pass) (bool, error) {
	c := p.Plan.ForwardPriority
	if c == "" {
		return false, nil
	}
	evs, retry, err := a.forwardPriority(ctx, c, p.wl)
	if err != nil {
		return true, fmt.Errorf("forwarding the priority to %s: %w", c, err)
	}
	p.events, p.acted = append(p.events, evs...), append(p.acted, evs...)
	if retry {
		p.result.RequeueAfter = requeueSoon
	}
	return false, nil
}

func clearJobActivity(ctx context.Context, a *Actor, p *pass) (bool, error) {
	if !p.Plan.ClearJobActivity || p.Job.Obj == nil {
		return false, nil
	}
	err := a.clearActivity(ctx, p.Job)
	switch {
	case apierrors.IsConflict(err):
		// The job changed since the cache showed it: plan again on the
		// newer version.
		p.result = reconcile.Result{RequeueAfter: requeueSoon}
		return true, nil
	case err != nil:
		return true, fmt.Errorf("clearing the job's mirrored activity: %w", err)
	}
	return false, nil
}

// createCopies makes the nominated workers' Workload copies. A pass that
// failed, or whose copy a worker would not take (passed over now), ends
// here: the plan counted on copies that are not there, and the next one,
// made without that worker, says what it nominates.
func createCopies(ctx context.Context, a *Actor, p *pass) (bool, error) {
	var errs []error
	passedOver := false
	for i, res := range a.createOn(ctx, p.Plan.Create, p.wl) {
		if res.err != nil {
			errs = append(errs, fmt.Errorf("creating Workload copy on %s: %w", p.Plan.Create[i], res.err))
		}
		if res.ev != nil {
			p.acted, passedOver = append(p.acted, *res.ev), true
		}
	}
	if len(errs) > 0 {
		return true, errors.Join(errs...)
	}
	if passedOver {
		p.result = reconcile.Result{RequeueAfter: requeueSoon}
		return true, nil
	}
	return false, nil
}

func recordPlacement(ctx context.Context, a *Actor, p *pass) (bool, error) {
	if p.Plan.Record == nil && !p.Plan.ClearRecord {
		return false, nil
	}
	return p.managerWritten(a.writePlacement(ctx, p.wl, p.Plan.Record))
}

// managerWritten ends the pass after a write to the manager Workload that
// failed. A conflict means the pass decided on an old version: the next
// decides again on the new one, with every copy still where it was.
func (p *pass) managerWritten(err error) (bool, error) {
	switch {
	case apierrors.IsConflict(err):
		p.result = reconcile.Result{RequeueAfter: afterConflict}
		return true, nil
	case err != nil:
		return true, err
	}
	return false, nil
}

// recordMoves writes the moves workers' evictions made the job take,
// before the status write that sends it back to Kueue.
func recordMoves(ctx context.Context, a *Actor, p *pass) (bool, error) {
	if p.Plan.RecordMoves == nil {
		return false, nil
	}
	return p.managerWritten(a.writeMoves(ctx, p.wl, p.Plan.RecordMoves))
}

// createTheJob creates the job on the worker it is placed on. Until it is
// there, no Ready and no event says it went.
func createTheJob(ctx context.Context, a *Actor, p *pass) (bool, error) {
	c := p.Plan.CreateJob
	if c == "" {
		return false, nil
	}
	if back := a.backInReach(p.Plan.Unreached); back != "" {
		// The plan could not see what that worker holds, an earlier copy
		// of the job maybe: the next one does. The placement, if recorded,
		// holds the choice meanwhile.
		ctrl.LoggerFrom(ctx).V(2).Info("Holding the job back: a worker came back in reach", "cluster", back)
		p.events, p.status, p.result.RequeueAfter = withoutDispatched(p.events), nil, requeueSoon
		return false, nil
	}
	ev, err := a.createJob(ctx, c, p.wl, p.Job)
	if err != nil {
		return true, fmt.Errorf("creating remote job on %s: %w", c, err)
	}
	if ev != nil {
		// The job could not go there: look again soon.
		p.events, p.status, p.result.RequeueAfter = append(withoutDispatched(p.events), *ev), nil, requeueSoon
	}
	return false, nil
}

func withoutDispatched(events []plan.Event) []plan.Event {
	return slices.DeleteFunc(events, func(e plan.Event) bool { return e.Reason == courier.EventDispatched })
}

// deleteCopiesStep removes the copies the plan gives up, once the decision
// that needs them gone is recorded. A pass that ends here reports all its
// events.
func deleteCopiesStep(ctx context.Context, a *Actor, p *pass) (bool, error) {
	var deleted []string
	var errs []error
	retrySoon := false
	for i, res := range a.deleteOn(ctx, p.Plan.Delete, p.wl.Namespace, p.wl.Name, p.Job) {
		c := p.Plan.Delete[i]
		switch {
		case isStale(res.err):
			retrySoon = true
		case isRefusal(res.err):
			// Retrying every second would not change the worker's mind:
			// the pass goes on to the status, and ends in an error, whose
			// backoff grows.
			msg := plan.Truncate(fmt.Sprintf("Worker %q refused to delete the workload's copies: %v. They stay there; Courier tries again.", c, res.err), plan.MaxNoteLength)
			p.events = append(p.events, plan.Event{Type: "Warning", Reason: courier.EventDeleteRefused, Message: msg, Cluster: c})
			p.acted = append(p.acted, p.events[len(p.events)-1])
			p.failed = errors.Join(p.failed, fmt.Errorf("deleting copies on %s: %w", c, res.err))
		case res.err != nil:
			errs = append(errs, fmt.Errorf("deleting copies on %s: %w", c, res.err))
		case res.gone:
			deleted = append(deleted, c)
			p.out.removed(c)
		}
	}
	if len(deleted) > 0 {
		p.reportRemoval(ctx, deleted)
	}
	switch {
	case len(errs) > 0:
		p.reportAll = true
		return true, errors.Join(errs...)
	case retrySoon:
		// A worker's controller wrote a copy after the informer saw it:
		// the status waits for the next plan, on fresh state.
		p.reportAll, p.result = true, reconcile.Result{RequeueAfter: requeueSoon}
		return true, nil
	}
	return false, nil
}

// reportRemoval reports the copies removed from the workers deleted, but
// those of a finished Workload, which go without an event.
func (p *pass) reportRemoval(ctx context.Context, deleted []string) {
	if p.Plan.QuietRemoval {
		ctrl.LoggerFrom(ctx).V(2).Info("Removed the finished workload's copies", "clusters", deleted)
		return
	}
	removal := fmt.Sprintf("Removed the workload's copies from %s.", strings.Join(deleted, ", "))
	p.events, p.acted = withRemoval(p.events, removal), withRemoval(p.acted, removal)
}

// writeStatusStep writes Courier's part of the manager Workload's status,
// once, last.
func writeStatusStep(ctx context.Context, a *Actor, p *pass) (bool, error) {
	if p.status == nil {
		return false, nil
	}
	err := a.writeStatus(ctx, p.wl, p.Check, p.status)
	switch {
	case apierrors.IsConflict(err):
		// Kueue wrote in between; plan again from its version. The
		// placement, if recorded, holds the decision meanwhile.
		p.result = reconcile.Result{RequeueAfter: afterConflict}
		return true, nil
	case err != nil:
		return true, client.IgnoreNotFound(err)
	}
	p.out.statusWritten(a.Now())
	if p.status.Finished != nil {
		a.Expectations.ForgetWorkload(p.wl.UID)
	}
	return false, nil
}
