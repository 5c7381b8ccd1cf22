package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
)

// Reconcile observes one manager Workload and its copies, plans, and acts.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &kueue.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, wl); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting Workload: %w", err)
		}
		return r.removeEverywhere(ctx, req.NamespacedName)
	}
	ac, err := r.courierCheck(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	if ac == nil {
		// Not (or no longer) Courier's: nothing may stay on the workers.
		return r.removeEverywhere(ctx, req.NamespacedName)
	}
	o, job, err := r.observe(ctx, wl, ac)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := plan(o)
	ctrl.LoggerFrom(ctx).V(4).Info("Planned dispatch", "check", o.Check.State, "delete", p.Delete, "create", p.Create,
		"createJob", p.CreateJob, "syncJob", p.SyncJob, "statusChange", p.Status != nil)
	return r.act(ctx, wl, kueue.AdmissionCheckReference(ac.Name), p, job)
}

// act carries out a plan: remote deletes and creates, the job, the status
// mirror, then one status write and the events.
func (r *Reconciler) act(ctx context.Context, wl *kueue.Workload, check kueue.AdmissionCheckReference, p Plan, job jobInfo) (reconcile.Result, error) {
	result := reconcile.Result{RequeueAfter: p.RequeueAfter}
	events := p.Events
	var errs []error
	var deleted []string
	conflict := false
	for _, c := range p.Delete {
		gone, err := r.deleteCopies(ctx, c, wl.Namespace, wl.Name)
		switch {
		case apierrors.IsConflict(err):
			conflict = true
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting copies on %s: %w", c, err))
		case gone:
			deleted = append(deleted, c)
		}
	}
	if len(deleted) > 0 {
		events = append(events, Event{Type: "Normal", Reason: courier.EventRemoteDeleted,
			Message: fmt.Sprintf("Removed the workload's copies from %s.", strings.Join(deleted, ", "))})
	}
	if conflict && len(errs) == 0 {
		// A worker's controller wrote a copy after our informer saw it;
		// look again once the informer has caught up.
		r.record(wl, events)
		return reconcile.Result{RequeueAfter: requeueSoon}, nil
	}
	for _, c := range p.Create {
		ev, err := r.createWorkloadCopy(ctx, c, wl)
		if err != nil {
			errs = append(errs, fmt.Errorf("creating Workload copy on %s: %w", c, err))
		}
		if ev != nil {
			events = append(events, *ev)
			result.RequeueAfter = requeueSoon
		}
	}
	if len(errs) > 0 {
		r.record(wl, events)
		return reconcile.Result{}, errors.Join(errs...)
	}
	status := p.Status
	if p.CreateJob != "" {
		ev, err := r.createJob(ctx, p.CreateJob, wl, job)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("creating remote job on %s: %w", p.CreateJob, err)
		}
		if ev != nil {
			// The job could not go there: no Ready; look again soon.
			events, status, result.RequeueAfter = append(events, *ev), nil, requeueSoon
		}
	}
	if p.ClearJobActivity && job.obj != nil {
		if err := r.clearActivity(ctx, job); err != nil {
			return reconcile.Result{}, fmt.Errorf("clearing the job's mirrored activity: %w", err)
		}
	}
	if p.SyncJob != "" && job.obj != nil {
		if err := r.syncJob(ctx, p.SyncJob, wl, job.obj, job.adapter); err != nil {
			return reconcile.Result{}, fmt.Errorf("mirroring job status from %s: %w", p.SyncJob, err)
		}
	}
	if status != nil {
		if err := r.writeStatus(ctx, wl, check, status); apierrors.IsConflict(err) {
			// Kueue wrote in between; plan again from its version.
			return reconcile.Result{RequeueAfter: requeueSoon}, nil
		} else if err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if status.Finished != nil {
			r.skips.forget(wl.UID)
		}
	}
	r.record(wl, events)
	return result, nil
}

func (r *Reconciler) record(wl *kueue.Workload, events []Event) {
	for _, e := range events {
		r.recorder.Eventf(wl, nil, e.Type, e.Reason, "Dispatch", "%s", e.Message)
	}
}

// writeStatus applies Courier's part of the Workload status in one patch,
// guarded by the resourceVersion so that Kueue's concurrent writes are not
// lost.
func (r *Reconciler) writeStatus(ctx context.Context, wl *kueue.Workload, check kueue.AdmissionCheckReference, s *StatusChange) error {
	before := wl.DeepCopy()
	now := metav1.NewTime(r.now())
	state := findCheck(wl, check)
	if state == nil {
		return fmt.Errorf("admission check %q is not on Workload %s/%s", check, wl.Namespace, wl.Name)
	}
	if state.State != s.State {
		state.LastTransitionTime = now
	}
	state.State, state.Message = s.State, s.Message
	wl.Status.ClusterName = s.ClusterName
	wl.Status.NominatedClusterNames = s.Nominated
	if s.Finished != nil {
		cond := *s.Finished
		cond.ObservedGeneration, cond.LastTransitionTime = wl.Generation, now
		meta.SetStatusCondition(&wl.Status.Conditions, cond)
	}
	if err := r.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching Workload status: %w", err)
	}
	return nil
}

// createWorkloadCopy creates wl's copy on a worker. A create that fails for
// a reason a person must fix (a foreign object of the same name, a missing
// namespace) passes that worker over for a while and returns an event.
func (r *Reconciler) createWorkloadCopy(ctx context.Context, c string, wl *kueue.Workload) (*Event, error) {
	remote, err := r.cache.Get(c)
	if err != nil {
		return nil, nil // Not connected now; the next plan will see it.
	}
	err = remote.Client.Create(ctx, remoteWorkload(wl, r.opts.Origin))
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsAlreadyExists(err):
		existing := &kueue.Workload{}
		if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(wl), existing); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if r.owned(existing) {
			return nil, nil // Ours; the informer has not seen it yet.
		}
		return r.skip(wl, c, foreignSkip, courier.EventForeignObject,
			fmt.Sprintf("Worker %q has a Workload %s/%s that Courier did not create; Courier leaves it alone and passes the worker over.", c, wl.Namespace, wl.Name)), nil
	case isNamespaceMissing(err):
		return r.skip(wl, c, namespaceSkip, courier.EventNamespaceMissing,
			fmt.Sprintf("Namespace %q does not exist on worker %q; create it there, with LocalQueue %q, to dispatch to that worker.", wl.Namespace, c, wl.Spec.QueueName)), nil
	default:
		return nil, err
	}
}

// createJob creates the job on the worker that admitted its Workload,
// after the objects it needs there (its PodGroups), so that its pods find
// them.
func (r *Reconciler) createJob(ctx context.Context, c string, wl *kueue.Workload, job jobInfo) (*Event, error) {
	remote, err := r.cache.Get(c)
	if err != nil {
		return nil, err
	}
	copies := make([]*unstructured.Unstructured, 0, len(job.deps)+1)
	for _, dep := range job.deps {
		copy := adapter.CopyForWorker(dep, r.opts.Origin)
		labels := copy.GetLabels()
		labels[courier.WorkloadLabel] = wl.Name
		copy.SetLabels(labels)
		copies = append(copies, copy)
	}
	jobCopy, err := job.adapter.RemoteCopy(job.obj, wl.Name, r.opts.Origin)
	if err != nil {
		return nil, err
	}
	copies = append(copies, jobCopy)
	for _, copy := range copies {
		err := remote.Client.Create(ctx, copy)
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating %s %s: %w", copy.GetKind(), copy.GetName(), err)
		}
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(copy.GroupVersionKind())
		if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(copy), existing); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if r.owned(existing) {
			continue
		}
		ev := r.skip(wl, c, foreignSkip, courier.EventForeignObject,
			fmt.Sprintf("Worker %q has a %s %s/%s that Courier did not create; Courier leaves it alone and passes the worker over.", c, copy.GetKind(), copy.GetNamespace(), copy.GetName()))
		if _, err := r.deleteCopies(ctx, c, wl.Namespace, wl.Name); err != nil {
			return ev, err
		}
		return ev, nil
	}
	return nil, nil
}

func (r *Reconciler) skip(wl *kueue.Workload, c string, d time.Duration, reason, msg string) *Event {
	r.skips.add(wl.UID, c, msg, r.now().Add(d))
	return &Event{Type: "Warning", Reason: reason, Message: msg}
}

// syncJob mirrors the worker job's status onto the manager's job.
func (r *Reconciler) syncJob(ctx context.Context, c string, wl *kueue.Workload, job *unstructured.Unstructured, a adapter.Adapter) error {
	remote, err := r.cache.Get(c)
	if err != nil {
		return nil
	}
	jobs, err := r.remoteJobs(ctx, remote, wl.Namespace, wl.Name, a)
	if err != nil || len(jobs) == 0 {
		return err
	}
	data, err := a.StatusPatch(job, jobs[0])
	if err != nil {
		return err
	}
	return r.patchJobStatus(ctx, job, data)
}

// clearActivity removes the manager job's mirrored activity.
func (r *Reconciler) clearActivity(ctx context.Context, job jobInfo) error {
	data, err := job.adapter.ClearActivityPatch(job.obj)
	if err != nil {
		return err
	}
	return r.patchJobStatus(ctx, job.obj, data)
}

// patchJobStatus applies a merge patch to a manager job's status.
func (r *Reconciler) patchJobStatus(ctx context.Context, job *unstructured.Unstructured, data []byte) error {
	if data == nil {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, data)
	if slices.Contains(r.opts.StatusInObject, job.GroupVersionKind()) {
		return client.IgnoreNotFound(r.client.Patch(ctx, job, patch))
	}
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, job, patch))
}

// deleteCopies deletes Courier's copies of a Workload and its job on one
// worker, releasing the finalizers that held them. It reports whether there
// was anything to delete.
func (r *Reconciler) deleteCopies(ctx context.Context, c, ns, name string) (bool, error) {
	remote, err := r.cache.Get(c)
	if err != nil {
		return false, nil // Collected once the worker is back.
	}
	jobs, err := r.remoteJobs(ctx, remote, ns, name, nil)
	if err != nil {
		return false, err
	}
	var objs []client.Object
	for _, j := range jobs {
		objs = append(objs, j)
	}
	for _, gvk := range []schema.GroupVersionKind{adapter.PodGroupGVK, adapter.SchedulingWorkloadGVK} {
		items, err := listRemote(ctx, remote, gvk, client.InNamespace(ns), client.MatchingLabels{courier.WorkloadLabel: name})
		if err != nil {
			return false, err
		}
		for i := range items {
			objs = append(objs, &items[i])
		}
	}
	wl := &kueue.Workload{}
	if err := remote.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, wl); err == nil {
		objs = append(objs, wl)
	} else if !apierrors.IsNotFound(err) {
		return false, err
	}
	for _, obj := range objs {
		if err := deleteReleased(ctx, remote, obj); err != nil {
			return false, err
		}
	}
	return len(objs) > 0, nil
}

// removeEverywhere deletes the copies of a Workload on every worker. A
// conflict (a worker's controller wrote a copy after our informer saw it)
// is retried soon, not reported.
func (r *Reconciler) removeEverywhere(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	var errs []error
	var result reconcile.Result
	for _, c := range r.cache.Names() {
		_, err := r.deleteCopies(ctx, c, key.Namespace, key.Name)
		if apierrors.IsConflict(err) {
			result.RequeueAfter = requeueSoon
		} else if err != nil {
			errs = append(errs, fmt.Errorf("deleting copies on %s: %w", c, err))
		}
	}
	return result, errors.Join(errs...)
}

// deleteReleased drops the finalizers that Courier and Kueue put on a
// remote object to hold it, then deletes it.
func deleteReleased(ctx context.Context, remote *cluster.Remote, obj client.Object) error {
	kept := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool {
		return f == courier.RemoteFinalizer || f == kueueResourceInUseFinalizer
	})
	if len(kept) != len(obj.GetFinalizers()) {
		patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		obj.SetFinalizers(kept)
		if err := remote.Client.Patch(ctx, obj, patch); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	return client.IgnoreNotFound(remote.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

func (r *Reconciler) owned(obj client.Object) bool {
	return obj.GetLabels()[courier.OriginLabel] == r.opts.Origin
}

// isNamespaceMissing tells a create refused for want of a namespace.
func isNamespaceMissing(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}
