package act

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// writtenEvents are the events that report what a Forwarding wrote.
func writtenEvents(c string, f *adapter.Forwarding) []plan.Event {
	var out []plan.Event
	if len(f.Forwarded) > 0 {
		out = append(out, plan.Event{Type: "Normal", Reason: courier.EventForwarded,
			Message: fmt.Sprintf("Forwarded %s to worker %q.", strings.Join(f.Forwarded, ", "), c)})
	}
	if len(f.Restored) > 0 {
		out = append(out, plan.Event{Type: "Warning", Reason: courier.EventRemoteEdited,
			Message: fmt.Sprintf("The copy on worker %q was edited by hand (%s); set back to the manager's values.", c, strings.Join(f.Restored, ", "))})
	}
	return out
}

// forwardJob writes a Forwarding's update to base, the job copy on worker
// c as it was read, and returns the events to record on the manager's job.
// retry is set when the copy changed meanwhile.
func (a *Actor) forwardJob(ctx context.Context, c string, job workload.Job, base *unstructured.Unstructured, f *adapter.Forwarding) (events []plan.Event, retry bool, err error) {
	remote, err := a.Remotes.Get(c)
	if err != nil || job.Obj == nil {
		return nil, false, nil // Out of reach; the next look forwards what is there then.
	}
	fields := strings.Join(append(append([]string{}, f.Forwarded...), f.Restored...), ", ")
	events, retry, err = a.patchCopy(ctx, c, remote, base, f.Update.DeepCopy(), attemptKey(job.Obj, base), writtenEvents(c, f), "the update of "+fields)
	if err != nil {
		return nil, false, fmt.Errorf("patching the job copy: %w", err)
	}
	if !retry && len(events) > 0 && events[0].Type == "Normal" {
		ctrl.LoggerFrom(ctx).V(2).Info("Forwarding job changes", "cluster", c, "forwarded", f.Forwarded, "restored", f.Restored)
	}
	return events, retry, nil
}

// attemptKey names one write to a copy: from this version of the manager's
// object to this version of the copy.
func attemptKey(local, copy metav1.Object) string {
	return string(copy.GetUID()) + "/" + copy.GetResourceVersion() + "/" + local.GetResourceVersion()
}

// forwardPriority gives the Workload copy on worker c the manager
// Workload's priority; the worker's Kueue then orders and preempts by it.
func (a *Actor) forwardPriority(ctx context.Context, c string, wl *kueue.Workload) ([]plan.Event, bool, error) {
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return nil, false, nil
	}
	base := &kueue.Workload{}
	if err := remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), base); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	copy := base.DeepCopy()
	copy.Spec.Priority, copy.Spec.PriorityClassRef = wl.Spec.Priority, wl.Spec.PriorityClassRef.DeepCopy()
	priority := "none"
	if wl.Spec.Priority != nil {
		priority = strconv.Itoa(int(*wl.Spec.Priority))
	}
	done := plan.Event{Type: "Normal", Reason: courier.EventForwarded, Message: fmt.Sprintf("Forwarded the priority (%s) to worker %q.", priority, c)}
	events, retry, err := a.patchCopy(ctx, c, remote, base, copy, attemptKey(wl, base), []plan.Event{done}, "the priority change ("+priority+")")
	if err != nil {
		return nil, false, fmt.Errorf("patching the Workload copy's priority: %w", err)
	}
	return events, retry, nil
}

// patchCopy writes obj over base, a copy on worker c as it was read, in one
// merge patch guarded by the copy's resourceVersion: the worker's role
// grants patch, and a copy changed since it was read is compared again, not
// overwritten (retry). It returns done once written. A write the worker
// refuses (what names it) is reported, and neither it nor a write already
// made is tried again under key: an informer that has not shown the new
// version yet would ask for the same write.
func (a *Actor) patchCopy(ctx context.Context, c string, remote *cluster.Remote, base, obj client.Object, key string, done []plan.Event, what string) ([]plan.Event, bool, error) {
	now := a.Now()
	if a.Expectations.WasForwarded(key, now) {
		return nil, false, nil
	}
	err := remote.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		a.Expectations.Forwarded(key, now)
		return done, false, nil
	case apierrors.IsConflict(err):
		return nil, true, nil
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
		a.Expectations.Forwarded(key, now)
		return []plan.Event{{Type: "Warning", Reason: courier.EventNotForwarded, Message: plan.Truncate(
			fmt.Sprintf("Worker %q refused %s: %v", c, what, err), plan.MaxNoteLength)}}, false, nil
	}
	return nil, false, err
}

// recordOnJob records events on the manager's job, one per reason: the
// event recorder folds events of one reason on one object into a series
// that keeps the first note, so separate notes of a pass would be lost. A
// warning already recorded for this version of the job is not recorded
// again: a refusal stands until the job changes, and each pass would
// repeat it.
func (a *Actor) recordOnJob(job workload.Job, events []plan.Event) {
	if job.Obj == nil {
		return
	}
	now := a.Now()
	var fresh []plan.Event
	for _, e := range events {
		// Each note is remembered alone: a pass that repeats one of them
		// beside a new one reports only the new one.
		key := string(job.Obj.GetUID()) + "/" + strconv.FormatInt(job.Obj.GetGeneration(), 10) + "/" + e.Message
		if a.Expectations.Report(key, now) && e.Type == "Warning" {
			continue
		}
		fresh = append(fresh, e)
	}
	for _, e := range mergeByReason(fresh) {
		a.Recorder.Eventf(job.Obj, nil, e.Type, e.Reason, "Forward", "%s", e.Message)
	}
}

// mergeByReason joins the messages of events of the same type and reason,
// in order.
func mergeByReason(events []plan.Event) []plan.Event {
	var out []plan.Event
	at := map[[2]string]int{}
	for _, e := range events {
		k := [2]string{e.Type, e.Reason}
		if i, ok := at[k]; ok {
			out[i].Message = plan.Truncate(out[i].Message+" "+e.Message, plan.MaxNoteLength)
			continue
		}
		at[k] = len(out)
		out = append(out, e)
	}
	return out
}
