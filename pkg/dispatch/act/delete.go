package act

import (
	"context"
	"encoding/json"
	"errors"
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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// deleteCopies deletes what Courier created on worker c for the manager
// Workload ns/name: the Workload copy, the job copy and what the job needs,
// found through the workload index, and a copy of the job's name made for
// another Workload, when job names it. It reports whether it deleted
// anything.
func (a *Actor) deleteCopies(ctx context.Context, c, ns, name string, job workload.Job) (bool, error) {
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return false, nil // Collected once the worker is back.
	}
	objs, err := a.copiesOn(ctx, remote, ns, name, job)
	if err != nil {
		return false, err
	}
	found := false
	for _, obj := range objs {
		deleted, err := a.deleteCopy(ctx, remote, obj)
		if err != nil {
			return false, err
		}
		found = found || deleted
	}
	return found, nil
}

// copiesOn lists what Courier created on remote for the manager Workload
// ns/name, through the workload index, and a copy of the job's name made
// for another Workload, when job names it.
func (a *Actor) copiesOn(ctx context.Context, remote *cluster.Remote, ns, name string, job workload.Job) ([]client.Object, error) {
	inWorkload := []client.ListOption{client.InNamespace(ns), client.MatchingFields{workload.Index: name}}
	seen := map[types.UID]bool{}
	var objs []client.Object
	add := func(o client.Object) {
		if !seen[o.GetUID()] {
			seen[o.GetUID()] = true
			objs = append(objs, o)
		}
	}
	for _, gvk := range a.copyKinds() {
		items, err := remote.List(ctx, gvk, inWorkload...)
		if err != nil {
			return nil, err
		}
		for i := range items {
			add(&items[i])
		}
	}
	if job.Adapter != nil && job.Name != "" && remote.Serves(job.Adapter.GVK()) {
		other := &unstructured.Unstructured{}
		other.SetGroupVersionKind(job.Adapter.GVK())
		if err := remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, other); err == nil {
			add(other)
		} else if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
	}
	if remote.Serves(workload.GVK) {
		list := &kueue.WorkloadList{}
		if err := remote.Client.List(ctx, list, inWorkload...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			add(&list.Items[i])
		}
	}
	return objs, nil
}

// deleteCopy deletes one copy on remote, a job copy after what runs its
// pods, and reports whether the delete was its own.
func (a *Actor) deleteCopy(ctx context.Context, remote *cluster.Remote, obj client.Object) (bool, error) {
	now := a.Now()
	// The copies' demand is gone however they go: deleted here, with their
	// job copy by the worker's garbage collector, or already. A copy no
	// capacity snapshot showed before it went would otherwise count as
	// assumed demand until expect.AssumedTTL.
	if uid := obj.GetAnnotations()[courier.ManagerUIDAnnotation]; uid != "" {
		a.Expectations.Unassume(remote.Name, types.UID(uid))
	}
	if a.Expectations.IsDeleted(obj.GetUID(), now) || (a.Expectations.OwnerDeleted(obj, now) && obj.GetDeletionTimestamp() == nil) {
		// Deleted already, or the worker's garbage collector deletes it
		// with its job copy; once it has, its finalizers may need help.
		return false, nil
	}
	u, _ := obj.(*unstructured.Unstructured)
	ad, isJob := a.Adapters[obj.GetObjectKind().GroupVersionKind().GroupKind()]
	isJob = isJob && u != nil
	if isJob && obj.GetDeletionTimestamp() == nil {
		if err := a.stopRunner(ctx, remote, ad, u); err != nil {
			return false, err
		}
	}
	if err := a.release(ctx, remote, obj); err != nil {
		return false, fmt.Errorf("deleting %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	if isJob {
		if n, ok := expect.NewRemnant(remote.Name, ad, u); ok {
			a.Expectations.Remnant(n.Key, n.Remnant, now)
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		// Only a delete of its own counts; one under way, helped along by
		// dropping finalizers, was reported when it began.
		return false, nil
	}
	a.Expectations.Deleted(obj.GetUID(), now)
	return true, nil
}

// copyKinds are the kinds, besides Kueue's Workload, of what Courier
// creates on workers.
func (a *Actor) copyKinds() []schema.GroupVersionKind {
	kinds := slices.Clone(workload.DepKinds)
	for _, ad := range a.AdapterList {
		kinds = append(kinds, ad.GVK())
	}
	return kinds
}

// RemoveEverywhere deletes the copies of a Workload on every worker. A
// write refused because Courier's view was out of date is retried soon,
// not reported.
func (a *Actor) RemoveEverywhere(ctx context.Context, ns, name string) (reconcile.Result, error) {
	var errs []error
	var result reconcile.Result
	clusters := a.Remotes.Names()
	for i, res := range a.deleteOn(ctx, clusters, ns, name, workload.Job{}) {
		if isStale(res.err) {
			result.RequeueAfter = requeueSoon
		} else if res.err != nil {
			errs = append(errs, fmt.Errorf("deleting copies on %s: %w", clusters[i], res.err))
		}
	}
	return result, errors.Join(errs...)
}

// deletion is what deleteCopies did on one worker.
type deletion struct {
	gone bool
	err  error
}

// deleteOn deletes the copies of Workload ns/name on the clusters, on all
// at once.
func (a *Actor) deleteOn(ctx context.Context, clusters []string, ns, name string, job workload.Job) []deletion {
	return onEach(clusters, func(c string) deletion {
		gone, err := a.deleteCopies(ctx, c, ns, name, job)
		return deletion{gone: gone, err: err}
	})
}

// kueueFinalizerGrace is how long a deleted copy may wait for the worker's
// Kueue to drop its own finalizer before Courier drops it.
const kueueFinalizerGrace = 10 * time.Second

// release deletes a remote object, first dropping Courier's finalizer if
// it has one (and Kueue's with it), or Kueue's alone if the worker's Kueue
// has left it on a deleted object for a while. Neither write is guarded by
// the resourceVersion, so the worker's controllers writing the object at
// the same moment cause no conflict: the finalizer patch tests only that
// each finalizer is where Courier saw it, and the delete only the UID. A
// copy without Courier's finalizer costs one delete.
func (a *Actor) release(ctx context.Context, remote *cluster.Remote, obj client.Object) error {
	deleting := obj.GetDeletionTimestamp()
	stuck := deleting != nil && a.Now().Sub(deleting.Time) > kueueFinalizerGrace
	if slices.Contains(obj.GetFinalizers(), courier.RemoteFinalizer) || stuck {
		if patch := releasePatch(obj.GetFinalizers()); patch != nil {
			if err := remote.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := obj.GetUID()
	return client.IgnoreNotFound(remote.Client.Delete(ctx, obj, client.Preconditions{UID: &uid},
		client.PropagationPolicy(a.propagation(obj))))
}

// propagation is how a remote object's dependents go with it. A job copy
// is deleted in the foreground where its kind allows (see
// adapter.DeletePropagation): it stays, marked deleted, until the worker's
// garbage collector has deleted its pods, so that Courier counts it gone
// only once nothing of it can run, even on a worker whose controllers are
// down. Nothing else Courier copies owns pods.
func (a *Actor) propagation(obj client.Object) metav1.DeletionPropagation {
	if ad, isJob := a.Adapters[obj.GetObjectKind().GroupVersionKind().GroupKind()]; isJob {
		return ad.DeletePropagation()
	}
	return metav1.DeletePropagationBackground
}

// releasePatch is the JSON patch that removes Courier's and Kueue's holding
// finalizers from a list, each guarded by a test that it is still where it
// was seen; nil when there are none.
func releasePatch(finalizers []string) []byte {
	var ops []map[string]any
	for i := len(finalizers) - 1; i >= 0; i-- {
		if f := finalizers[i]; f == courier.RemoteFinalizer || f == workload.ResourceInUseFinalizer {
			path := fmt.Sprintf("/metadata/finalizers/%d", i)
			ops = append(ops, map[string]any{"op": "test", "path": path, "value": f}, map[string]any{"op": "remove", "path": path})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	data, _ := json.Marshal(ops) // Maps of strings always encode.
	return data
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
func (a *Actor) stopRunner(ctx context.Context, remote *cluster.Remote, ad adapter.Adapter, copy *unstructured.Unstructured) error {
	gvk, ok := ad.Runner()
	if !ok || ad.Outcome(copy).Finished {
		return nil
	}
	runner := &metav1.PartialObjectMetadata{}
	runner.SetGroupVersionKind(gvk)
	err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(copy), runner)
	if err == nil {
		if !workload.ControlledBy(runner, copy.GetUID()) || slices.Contains(runner.GetFinalizers(), metav1.FinalizerDeleteDependents) {
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
			"worker", remote.Name, "kind", gvk.Kind, "name", copy.GetName(), "grant", "get and delete on "+workload.Resource(gvk)+"."+gvk.Group+" (config/worker/rbac.yaml)", "error", err.Error())
		return nil
	default:
		return fmt.Errorf("deleting the %s of job copy %s: %w", gvk.Kind, copy.GetName(), err)
	}
}

// Release deletes what Courier created on worker c and still holds,
// releasing its finalizers, so that nothing of Courier's is left stuck
// there once its WorkerCluster goes. A worker out of reach is left as it
// is: there is nothing Courier can do for it.
func (a *Actor) Release(ctx context.Context, c string) error {
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return nil
	}
	var objs []client.Object
	if remote.Serves(workload.GVK) {
		copies := &kueue.WorkloadList{}
		if err := remote.Client.List(ctx, copies); err != nil {
			return fmt.Errorf("listing Workload copies on %s: %w", c, err)
		}
		for i := range copies.Items {
			objs = append(objs, &copies.Items[i])
		}
	}
	for _, gvk := range a.copyKinds() {
		items, err := remote.List(ctx, gvk)
		if err != nil {
			return fmt.Errorf("listing %s copies on %s: %w", gvk.Kind, c, err)
		}
		for i := range items {
			objs = append(objs, &items[i])
		}
	}
	var errs []error
	for _, obj := range objs {
		if obj.GetLabels()[courier.OriginLabel] != a.Origin {
			continue
		}
		if err := a.release(ctx, remote, obj); err != nil {
			errs = append(errs, fmt.Errorf("releasing %s %s/%s on %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), c, err))
			continue
		}
		a.Expectations.Deleted(obj.GetUID(), a.Now())
	}
	return errors.Join(errs...)
}
