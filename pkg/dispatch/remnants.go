package dispatch

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
)

// remnantRecheck is how often Courier looks again for a remnant: it is not
// in the workers' informers, so no event says it went.
const remnantRecheck = 5 * time.Second

// remnantOf is the remnant a job copy on cluster that is being deleted, or
// that Courier deletes, may leave: the dependent that runs its pods (see
// adapter.Adapter.Runner), when its kind has one and the copy had not
// finished. A finished copy's pods are done, and its runner is no reason
// to wait or to read the worker again.
func remnantOf(cluster string, a adapter.Adapter, copy *unstructured.Unstructured) (expect.RemnantNote, bool) {
	runner, ok := a.Runner()
	if !ok || copy.GetUID() == "" || a.Outcome(copy).Finished {
		return expect.RemnantNote{}, false
	}
	return expect.RemnantNote{
		Key:     expect.RemnantKey{Cluster: cluster, Namespace: copy.GetNamespace(), Name: copy.GetName()},
		Remnant: expect.Remnant{Owner: copy.GetUID(), Runner: runner},
	}, true
}

// remnantState is what a worker shows of the dependent that ran the pods
// of a job copy deleted in the background.
type remnantState struct {
	// left: it is still there, or Courier cannot tell it went.
	left bool
	// unknown says why Courier cannot tell, if so.
	unknown string
	// held names the finalizers that keep it while it is being deleted
	// (see heldBy).
	held string
}

// remnantLeft reports whether the dependent that ran the pods of a job
// copy deleted in the background, ns/name on the worker, is still there,
// and if Courier cannot tell, why. It reads the worker's API server: the
// runner's kind is not in the informers, and the read is made only for a
// job whose copy Courier saw go.
func (r *Reconciler) remnantLeft(ctx context.Context, remote *cluster.Remote, ns, name string, seen *expect.Seen) (remnantState, error) {
	key := expect.RemnantKey{Cluster: remote.Name, Namespace: ns, Name: name}
	rem, ok := r.exp.RemnantOf(key, r.now())
	if !ok {
		return remnantState{}, nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(rem.Runner)
	err := remote.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	switch {
	case err == nil && controlledBy(obj, rem.Owner):
		return remnantState{left: true, held: heldBy(rem.Runner.Kind, obj)}, nil
	case err == nil, apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		// Gone, made for another copy since, or of a kind the worker does
		// not serve: nothing of the deleted copy runs.
		seen.Gone = append(seen.Gone, expect.RemnantNote{Key: key, Remnant: rem})
		return remnantState{}, nil
	case apierrors.IsForbidden(err):
		return remnantState{left: true, unknown: fmt.Sprintf("Courier may not read %s there to tell; grant get on %s (config/worker/rbac.yaml)",
			plural(rem.Runner), plural(rem.Runner)+"."+rem.Runner.Group)}, nil
	default:
		return remnantState{}, fmt.Errorf("reading the %s of the deleted job copy: %w", rem.Runner.Kind, err)
	}
}

// stopRunner deletes in the foreground the dependent that runs the pods
// of copy, a job copy Courier is about to delete in the background (see
// adapter.Adapter.Runner). Left to the worker's garbage collector, which
// deletes it once the copy is gone, it would go in the background too,
// before its pods: Courier, which waits for it (remnantLeft), would
// dispatch the job again while they still ran. Deleted in the foreground
// first, it stays, marked deleted, until its pods are gone; the copy goes
// a moment later, before its controller can make another. A finished
// copy's pods are done; a worker that may not read or delete the runner
// leaves it to its garbage collector, as before.
func (r *Reconciler) stopRunner(ctx context.Context, remote *cluster.Remote, a adapter.Adapter, copy *unstructured.Unstructured) error {
	gvk, ok := a.Runner()
	if !ok || a.Outcome(copy).Finished {
		return nil
	}
	runner := &metav1.PartialObjectMetadata{}
	runner.SetGroupVersionKind(gvk)
	err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(copy), runner)
	if err == nil {
		if !controlledBy(runner, copy.GetUID()) || slices.Contains(runner.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			return nil
		}
		uid := runner.GetUID()
		err = remote.Client.Delete(ctx, runner, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationForeground))
	}
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err), meta.IsNoMatchError(err):
		// Deleted, none yet, or replaced since the read.
		return nil
	case apierrors.IsForbidden(err):
		// Not an error: the copy must go all the same. Logged at the default
		// level, as a deployment to fix.
		ctrl.LoggerFrom(ctx).Info("Leaving a deleted job copy's runner to the worker's garbage collector: Courier may not delete it, and the job may be dispatched again while its pods stop",
			"worker", remote.Name, "kind", gvk.Kind, "name", copy.GetName(), "grant", "get and delete on "+plural(gvk)+"."+gvk.Group+" (config/worker/rbac.yaml)", "error", err.Error())
		return nil
	default:
		return fmt.Errorf("deleting the %s of job copy %s: %w", gvk.Kind, copy.GetName(), err)
	}
}

func controlledBy(obj metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == owner
}

// plural is a kind's resource name, as RBAC rules spell it.
func plural(gvk schema.GroupVersionKind) string {
	p, _ := meta.UnsafeGuessKindToResource(gvk)
	return p.Resource
}
