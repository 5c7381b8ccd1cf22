package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

// deleteCopies deletes what Courier created on worker c for the manager
// Workload ns/name: the Workload copy, the job copy and what the job needs,
// found through the workload index, and a copy of the job's name made for
// another Workload, when job names it. It reports whether it deleted
// anything.
func (r *Reconciler) deleteCopies(ctx context.Context, c, ns, name string, job jobInfo) (bool, error) {
	remote, err := r.remotes.Get(c)
	if err != nil {
		return false, nil // Collected once the worker is back.
	}
	inWorkload := []client.ListOption{client.InNamespace(ns), client.MatchingFields{workloadIndex: name}}
	seen := map[types.UID]bool{}
	var objs []client.Object
	add := func(o client.Object) {
		if !seen[o.GetUID()] {
			seen[o.GetUID()] = true
			objs = append(objs, o)
		}
	}
	for _, gvk := range r.copyKinds() {
		items, err := listRemote(ctx, remote, gvk, inWorkload...)
		if err != nil {
			return false, err
		}
		for i := range items {
			add(&items[i])
		}
	}
	if job.adapter != nil && job.name != "" && remote.Serves(job.adapter.GVK()) {
		other := &unstructured.Unstructured{}
		other.SetGroupVersionKind(job.adapter.GVK())
		if err := remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.name}, other); err == nil {
			add(other)
		} else if client.IgnoreNotFound(err) != nil {
			return false, err
		}
	}
	if remote.Serves(workloadGVK) {
		list := &kueue.WorkloadList{}
		if err := remote.Client.List(ctx, list, inWorkload...); err != nil {
			return false, err
		}
		for i := range list.Items {
			add(&list.Items[i])
		}
	}
	found := false
	for _, obj := range objs {
		// The copies' demand is gone however they go: deleted here, with
		// their job copy by the worker's garbage collector, or already. A
		// copy no capacity snapshot showed before it went would otherwise
		// count as assumed demand until expect.AssumedTTL.
		if uid := obj.GetAnnotations()[courier.ManagerUIDAnnotation]; uid != "" {
			r.exp.Unassume(c, types.UID(uid))
		}
		if r.exp.IsDeleted(obj.GetUID(), r.now()) || (r.goesWithOwner(obj, r.now()) && obj.GetDeletionTimestamp() == nil) {
			// Deleted already, or the worker's garbage collector deletes it
			// with its job copy; once it has, its finalizers may need help.
			continue
		}
		u, _ := obj.(*unstructured.Unstructured)
		a, isJob := r.adapters[obj.GetObjectKind().GroupVersionKind().GroupKind()]
		if isJob && u != nil && obj.GetDeletionTimestamp() == nil {
			if err := r.stopRunner(ctx, remote, a, u); err != nil {
				return false, err
			}
		}
		if err := r.release(ctx, remote, obj); err != nil {
			return false, fmt.Errorf("deleting %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
		if isJob && u != nil {
			if n, ok := remnantOf(c, a, u); ok {
				r.exp.Remnant(n.Key, n.Remnant, r.now())
			}
		}
		if obj.GetDeletionTimestamp() == nil {
			// Only a delete of its own counts; one under way, helped along
			// by dropping finalizers, was reported when it began.
			found = true
			r.exp.Deleted(obj.GetUID(), r.now())
		}
	}
	return found, nil
}

// copyKinds are the kinds, besides Kueue's Workload, of what Courier
// creates on workers.
func (r *Reconciler) copyKinds() []schema.GroupVersionKind {
	kinds := slices.Clone(depKinds)
	for _, a := range r.opts.Adapters {
		kinds = append(kinds, a.GVK())
	}
	return kinds
}

// removeEverywhere deletes the copies of a Workload on every worker. A
// write refused because Courier's view was out of date is retried soon,
// not reported.
func (r *Reconciler) removeEverywhere(ctx context.Context, ns, name string) (reconcile.Result, error) {
	var errs []error
	var result reconcile.Result
	clusters := r.remotes.Names()
	for i, res := range r.deleteOn(ctx, clusters, ns, name, jobInfo{}) {
		if isRetryable(res.err) {
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
func (r *Reconciler) deleteOn(ctx context.Context, clusters []string, ns, name string, job jobInfo) []deletion {
	return onEach(clusters, func(c string) deletion {
		gone, err := r.deleteCopies(ctx, c, ns, name, job)
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
func (r *Reconciler) release(ctx context.Context, remote *cluster.Remote, obj client.Object) error {
	deleting := obj.GetDeletionTimestamp()
	stuck := deleting != nil && r.now().Sub(deleting.Time) > kueueFinalizerGrace
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
		client.PropagationPolicy(r.propagation(obj))))
}

// propagation is how a remote object's dependents go with it. A job copy
// is deleted in the foreground where its kind allows (see
// adapter.DeletePropagation): it stays, marked deleted, until the worker's
// garbage collector has deleted its pods, so that Courier counts it gone
// only once nothing of it can run, even on a worker whose controllers are
// down. Nothing else Courier copies owns pods.
func (r *Reconciler) propagation(obj client.Object) metav1.DeletionPropagation {
	if a, isJob := r.adapters[obj.GetObjectKind().GroupVersionKind().GroupKind()]; isJob {
		return a.DeletePropagation()
	}
	return metav1.DeletePropagationBackground
}

// releasePatch is the JSON patch that removes Courier's and Kueue's holding
// finalizers from a list, each guarded by a test that it is still where it
// was seen; nil when there are none.
func releasePatch(finalizers []string) []byte {
	var ops []map[string]any
	for i := len(finalizers) - 1; i >= 0; i-- {
		if f := finalizers[i]; f == courier.RemoteFinalizer || f == kueueResourceInUseFinalizer {
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
