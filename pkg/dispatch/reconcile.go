package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/expect"
)

// Reconcile observes one manager Workload and its copies, plans, and acts.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &kueue.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, wl); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting Workload: %w", err)
		}
		// Deleted on the manager: nothing of it may stay on the workers.
		return r.removeEverywhere(ctx, req.Namespace, req.Name)
	}
	log := ctrl.LoggerFrom(ctx)
	if r.exp.Behind(wl.UID, wl.ResourceVersion, r.now()) {
		// Courier's own last write, or the one that refused Courier's, is
		// not in the cache yet; its event brings the next pass (see
		// workloadChanged). The requeue is only a backstop.
		return reconcile.Result{RequeueAfter: requeueSoon}, nil
	}
	seen := &expect.Seen{CaughtUp: []types.UID{wl.UID}}
	placement, err := placementOf(wl)
	if err != nil {
		log.V(2).Info("Ignoring a placement record Courier did not write", "reason", err.Error())
	}
	ref, err := r.courierCheck(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	ref, ours, err := r.adopt(ctx, wl, ref, placement)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !ours {
		// Not (or no longer) Courier's, and Courier runs nothing of it:
		// copies of that name belong to an earlier Workload, or were
		// nominated before its check went.
		return r.removeEverywhere(ctx, wl.Namespace, wl.Name)
	}
	o, job, err := r.observe(ctx, wl, ref, placement, seen)
	if err != nil {
		return reconcile.Result{}, err
	}
	if o.jobBehind {
		// Its status events do not bring passes (jobChanged): look again
		// soon.
		r.exp.Settle(*seen, r.now())
		return reconcile.Result{RequeueAfter: requeueSoon}, nil
	}
	p := plan(o)
	log.V(4).Info("Planned dispatch", "check", o.Check.State, "placement", o.Placement, "delete", p.Delete, "create", p.Create,
		"record", p.Record, "createJob", p.CreateJob, "syncJob", p.SyncJob, "finalSync", p.FinalSync, "statusChange", p.Status != nil)
	var check kueue.AdmissionCheckReference
	if ref.state != nil {
		check = ref.state.Name
	}
	r.exp.Settle(*seen, r.now())
	res, err := r.act(ctx, wl, check, p, job, outcomeOf(o, p))
	if d := passOverEnds(o.PassedOver, r.now()); err == nil && d > 0 {
		// A worker passed over may take the job once the while is over.
		res.RequeueAfter = soonest(res.RequeueAfter, d)
	}
	if o.UnseenJob && err == nil {
		res.RequeueAfter = soonest(res.RequeueAfter, requeueSoon)
	}
	return res, err
}

// act carries out a plan: status mirrors, forwarded changes, Workload
// copies, the placement record, the job, deletes, the status write, events. Each step runs only
// if the ones before it succeeded, so that the final job status is on the
// manager before the Workload finishes or any copy goes, the placement is
// recorded before the job exists anywhere, and no copy is deleted for a
// decision the manager refused.
func (r *Reconciler) act(ctx context.Context, wl *kueue.Workload, check kueue.AdmissionCheckReference, p Plan, job jobInfo, out outcome) (reconcile.Result, error) {
	result := reconcile.Result{RequeueAfter: p.RequeueAfter}
	// events are all this pass reports; acted, those of what it did (a
	// copy made, a worker passed over, copies removed). A write refused
	// for a conflict reports only acted: the next pass plans the rest
	// again, from the newer version, and says it then.
	events := p.Events
	var acted []Event
	if p.FinalSync != "" {
		if err := r.finalSync(ctx, p.FinalSync, wl, job, p.FinalFrom); err != nil {
			return reconcile.Result{}, fmt.Errorf("mirroring the final job status from %s: %w", p.FinalSync, err)
		}
	}
	if p.SyncJob != "" {
		if err := r.syncJob(ctx, p.SyncJob, wl, job); err != nil {
			return reconcile.Result{}, fmt.Errorf("mirroring job status from %s: %w", p.SyncJob, err)
		}
	}
	jobEvents := p.JobEvents
	if p.Forward != "" {
		evs, retry, err := r.forwardJob(ctx, p.Forward, job, p.ForwardBase, p.Forwarding)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("forwarding job changes to %s: %w", p.Forward, err)
		}
		jobEvents = append(jobEvents, evs...)
		if retry {
			// The copy changed meanwhile: the next pass compares again and
			// reports all it finds in one event per reason.
			jobEvents, result.RequeueAfter = nil, requeueSoon
		}
	}
	if p.ForwardPriority != "" {
		evs, retry, err := r.forwardPriority(ctx, p.ForwardPriority, wl)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("forwarding the priority to %s: %w", p.ForwardPriority, err)
		}
		events, acted = append(events, evs...), append(acted, evs...)
		if retry {
			result.RequeueAfter = requeueSoon
		}
	}
	r.recordOnJob(job, jobEvents)
	if p.ClearJobActivity && job.obj != nil {
		if err := r.clearActivity(ctx, job); apierrors.IsConflict(err) {
			// The job changed since the cache showed it: plan again on the
			// newer version.
			return reconcile.Result{RequeueAfter: requeueSoon}, nil
		} else if err != nil {
			return reconcile.Result{}, fmt.Errorf("clearing the job's mirrored activity: %w", err)
		}
	}
	var errs []error
	passedOver := false
	for i, res := range r.createOn(ctx, p.Create, wl) {
		if res.lately {
			// Created moments ago, not delivered by the informer yet. Its
			// event brings the next pass; the requeue is for a copy gone
			// before the memory of it.
			result.RequeueAfter = soonest(result.RequeueAfter, expect.CreatedTTL)
			continue
		}
		if res.err != nil {
			errs = append(errs, fmt.Errorf("creating Workload copy on %s: %w", p.Create[i], res.err))
		}
		if res.ev != nil {
			acted, passedOver = append(acted, *res.ev), true
		}
	}
	// A pass that failed, or whose copy a worker would not take (passed
	// over now), reports only what it did: the plan counted on copies that
	// are not there, and the next one, made without that worker, says
	// what it nominates.
	if len(errs) > 0 {
		r.record(wl, acted)
		return reconcile.Result{}, errors.Join(errs...)
	}
	if passedOver {
		r.record(wl, acted)
		return reconcile.Result{RequeueAfter: requeueSoon}, nil
	}
	if p.Record != nil || p.ClearRecord {
		if err := r.writePlacement(ctx, wl, p.Record); err != nil {
			if apierrors.IsConflict(err) {
				// Decided on an old version: decide again on the new one,
				// with every copy still where it was.
				r.record(wl, acted)
				return reconcile.Result{RequeueAfter: afterConflict}, nil
			}
			r.record(wl, acted)
			return reconcile.Result{}, err
		}
	}
	status := p.Status
	if p.CreateJob != "" && job.adapter != nil && r.createdLately(p.CreateJob, job.adapter.GVK(), wl.UID) {
		result.RequeueAfter = soonest(result.RequeueAfter, expect.CreatedTTL) // As for Workload copies above.
	} else if back := r.backInReach(p.Unreached); p.CreateJob != "" && back != "" {
		// The plan could not see what that worker holds, an earlier copy
		// of the job maybe: the next one does. The placement, if recorded
		// above, holds the choice meanwhile.
		ctrl.LoggerFrom(ctx).V(2).Info("Holding the job back: a worker came back in reach", "cluster", back)
		events = slices.DeleteFunc(events, func(e Event) bool { return e.Reason == courier.EventDispatched })
		status, result.RequeueAfter = nil, requeueSoon
	} else if p.CreateJob != "" {
		ev, err := r.createJob(ctx, p.CreateJob, wl, job)
		if err != nil {
			// Not dispatched: no event says it was.
			r.record(wl, acted)
			return reconcile.Result{}, fmt.Errorf("creating remote job on %s: %w", p.CreateJob, err)
		}
		if ev != nil {
			// The job could not go there: no Ready, nor the event that
			// says it went; look again soon.
			events = slices.DeleteFunc(events, func(e Event) bool { return e.Reason == courier.EventDispatched })
			events, status, result.RequeueAfter = append(events, *ev), nil, requeueSoon
		}
	}
	// Copies go once the decision that needs them gone is recorded: a
	// placement refused above leaves every copy where it was.
	var deleted []string
	retrySoon := false
	for i, res := range r.deleteOn(ctx, p.Delete, wl.Namespace, wl.Name, job) {
		c := p.Delete[i]
		switch {
		case isRetryable(res.err):
			retrySoon = true
		case res.err != nil:
			errs = append(errs, fmt.Errorf("deleting copies on %s: %w", c, res.err))
		case res.gone:
			deleted = append(deleted, c)
			out.removed(c)
		}
	}
	if len(deleted) > 0 {
		removal := fmt.Sprintf("Removed the workload's copies from %s.", strings.Join(deleted, ", "))
		if p.RemovedAs != nil && slices.Contains(deleted, p.RemovedFrom) {
			ev := *p.RemovedAs
			ev.Message += " " + removal
			events, acted = append(events, ev), append(acted, ev)
		} else {
			events, acted = withRemoval(events, removal), withRemoval(acted, removal)
		}
	}
	if len(errs) > 0 {
		r.record(wl, events)
		return reconcile.Result{}, errors.Join(errs...)
	}
	if retrySoon {
		// A worker's controller wrote a copy after the informer saw it:
		// the status waits for the next plan, on fresh state.
		r.record(wl, events)
		return reconcile.Result{RequeueAfter: requeueSoon}, nil
	}
	if status != nil {
		if err := r.writeStatus(ctx, wl, check, status); apierrors.IsConflict(err) {
			// Kueue wrote in between; plan again from its version. The
			// placement, if recorded, holds the decision meanwhile.
			r.record(wl, acted)
			return reconcile.Result{RequeueAfter: afterConflict}, nil
		} else if err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		out.statusWritten(r.now())
		if status.Finished != nil {
			r.exp.ForgetWorkload(wl.UID)
		}
	}
	r.record(wl, events)
	return result, nil
}

// backInReach names the first of clusters that is connected now, or "".
func (r *Reconciler) backInReach(clusters []string) string {
	for _, c := range clusters {
		if _, err := r.remotes.Get(c); err == nil {
			return c
		}
	}
	return ""
}

func (r *Reconciler) record(wl *kueue.Workload, events []Event) {
	for _, e := range events {
		var related runtime.Object
		if e.Cluster != "" {
			related = &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: e.Cluster}}
		}
		r.recorder.Eventf(wl, related, e.Type, e.Reason, "Dispatch", "%s", e.Message)
	}
}

// withRemoval reports removed copies: in the Dispatched event when there is
// one, since losing copies go as the job is dispatched, and otherwise in
// an event of their own. Events are writes to the manager, one per step.
func withRemoval(events []Event, msg string) []Event {
	for i := range events {
		if events[i].Reason == courier.EventDispatched {
			events[i].Message += " " + msg
			return events
		}
	}
	return append(events, Event{Type: "Normal", Reason: courier.EventRemoteDeleted, Message: msg})
}

// requeueSoon is when to look again after passing a worker over, or at
// state that is about to change.
const requeueSoon = time.Second

// afterConflict is when a pass whose write on a manager Workload was
// refused looks again. The newer version's event may have come before the
// refusal was noted, and gone by as one no plan reads: the pass does not
// wait for it. If the cache still shows the old version then, the pass
// waits for the event, which the note now lets through.
const afterConflict = 20 * time.Millisecond

// isRetryable tells a write refused because Courier's view was out of
// date (a conflict, or a JSON patch whose test no longer holds), which the
// next plan, on fresh state, resolves.
func isRetryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsInvalid(err)
}

// passOverEnds is how long until the first of the pass-over notes in
// force ends, or 0 if none is: nothing else announces that a worker may be
// used again.
func passOverEnds(notes map[string]PassOver, now time.Time) time.Duration {
	var out time.Duration
	for _, n := range notes {
		// A note still holds at Until itself.
		if d := n.Until.Sub(now) + time.Millisecond; d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}
