package dispatch

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
)

// workloadIndex finds, in a worker's informers, what Courier created there
// for one manager Workload: its copy, the job's copy and the objects the
// job needs. Reads by it cost what they find, not what the worker holds.
const workloadIndex = "courier.dev/workload"

// depKinds are the kinds of the objects a job may need on a worker
// besides itself.
var depKinds = []schema.GroupVersionKind{adapter.PodGroupGVK, adapter.SchedulingWorkloadGVK}

// RemoteIndexes are the field indexes the dispatcher reads workers'
// informers by; give them to the cluster cache.
func RemoteIndexes() map[string]client.IndexerFunc {
	return map[string]client.IndexerFunc{workloadIndex: func(o client.Object) []string {
		if name := workloadOf(o); name != "" {
			return []string{name}
		}
		return nil
	}}
}

// workloadOf names the manager Workload a remote object belongs to: a
// Workload copy is named as it; a job copy names it with Kueue's prebuilt
// marker; a PodGroup or core Workload copy with Courier's workload label.
func workloadOf(obj client.Object) string {
	if wl, ok := obj.(*kueue.Workload); ok {
		return wl.Name
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if name := adapter.WorkloadName(u); name != "" {
			return name
		}
	}
	return obj.GetLabels()[courier.WorkloadLabel]
}

// remoteState reads what one worker holds for wl, by name: its Workload
// copy and its job copy, each a single read from the informers. Objects
// Courier deleted count as gone, whether or not the informer has seen it.
func (r *Reconciler) remoteState(ctx context.Context, remote *cluster.Remote, wl *kueue.Workload, job jobInfo, seen *expect.Seen) (Remote, error) {
	var rs Remote
	now := r.now()
	if remote.Serves(workloadGVK) {
		copy := &kueue.Workload{}
		err := remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), copy)
		switch {
		case err == nil && (r.exp.IsDeleted(copy.UID, now) || r.goesWithOwner(copy, now)):
		case err == nil && isCopyOf(copy, wl) && !ofEarlierAdmission(copy, wl):
			rs.Workload = copy
		case err == nil:
			rs.Stale = true
		case !apierrors.IsNotFound(err):
			return rs, err
		}
	}
	if job.adapter != nil && job.name != "" && remote.Serves(job.adapter.GVK()) {
		copy := &unstructured.Unstructured{}
		copy.SetGroupVersionKind(job.adapter.GVK())
		err := remote.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: job.name}, copy)
		switch {
		case apierrors.IsNotFound(err):
			rem, err := r.remnantLeft(ctx, remote, wl.Namespace, job.name, seen)
			if err != nil {
				return rs, err
			}
			rs.OldJob, rs.Remnant, rs.RemnantUnknown, rs.Held = rem.left, rem.left, rem.unknown, rem.held
			rs.unseenJob = r.createdLately(remote.Name, job.adapter.GVK(), wl.UID)
		case err != nil:
			return rs, err
		case r.exp.IsDeleted(copy.GetUID(), now):
			// Deleted, with its pods first where the kind allows: until it
			// (and, if not, what runs its pods, noted by deleteCopies) is
			// gone they may run.
			rs.OldJob = true
		case !jobCopyOf(copy, wl) || ofEarlierAdmission(copy, wl):
			// A copy made for another Workload of a job of the same name,
			// or for an admission before the last eviction.
			rs.Stale, rs.OldJob = true, true
		default:
			// A copy someone else is deleting still says how the job ended.
			rs.OldJob = copy.GetDeletionTimestamp() != nil
			if n, ok := remnantOf(remote.Name, job.adapter, copy); rs.OldJob && ok {
				seen.Deleting = append(seen.Deleting, n)
			}
			rs.HasJob, rs.jobCopy = true, copy
			rs.JobOutcome = job.adapter.Outcome(copy)
			rs.FinalMirrored = r.exp.IsMirrored(copy.GetUID(), now)
			if job.obj != nil {
				patch, err := job.adapter.StatusPatch(job.obj, copy)
				rs.JobMirrored = err == nil && patch == nil
			}
		}
		if err == nil && rs.OldJob {
			rs.Held = heldBy(copy.GetKind(), copy)
		}
	}
	if !rs.HasJob && rs.Workload == nil && !rs.Stale && !rs.OldJob {
		// What a job needs may outlive it, if the job went behind
		// Courier's back; it goes too.
		for _, gvk := range depKinds {
			items, err := listRemote(ctx, remote, gvk, client.InNamespace(wl.Namespace), client.MatchingFields{workloadIndex: wl.Name})
			if err != nil {
				return rs, err
			}
			for i := range items {
				rs.Stale = rs.Stale || !r.exp.IsDeleted(items[i].GetUID(), now)
			}
		}
	}
	return rs, nil
}

// heldBy names the finalizers that hold obj, of kind, while it is being
// deleted, and since when: a job copy, or the dependent that ran a deleted
// copy's pods; "" for an object not being deleted or held by none of them.
// Courier's own, which it releases as it deletes, and the garbage
// collector's, which a foreground delete sets until the pods are gone, are
// not named: those go by themselves.
func heldBy(kind string, obj metav1.Object) string {
	ts := obj.GetDeletionTimestamp()
	if ts == nil {
		return ""
	}
	var held []string
	for _, f := range obj.GetFinalizers() {
		if f != courier.RemoteFinalizer && f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
			held = append(held, f)
		}
	}
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s/%s has been deleting since %s, held by the finalizers %s",
		kind, obj.GetNamespace(), obj.GetName(), ts.UTC().Format(time.RFC3339), strings.Join(held, ", "))
}

// goesWithOwner reports whether a remote object is on its way out with its
// controller, a copy Courier deleted: the worker's garbage collector
// deletes a Workload copy that its Kueue made the job copy's.
func (r *Reconciler) goesWithOwner(obj metav1.Object, now time.Time) bool {
	owner := metav1.GetControllerOfNoCopy(obj)
	return owner != nil && r.exp.IsDeleted(owner.UID, now)
}

// jobCopyOf reports whether a worker's job copy was made for wl. Copies
// made before Courier recorded the manager Workload's UID on them match by
// name alone.
func jobCopyOf(copy *unstructured.Unstructured, wl *kueue.Workload) bool {
	if adapter.WorkloadName(copy) != wl.Name {
		return false
	}
	uid, ok := copy.GetAnnotations()[courier.ManagerUIDAnnotation]
	return !ok || uid == string(wl.UID)
}

// hasCopies reports whether any connected worker holds a Workload copy of
// wl.
func (r *Reconciler) hasCopies(ctx context.Context, wl *kueue.Workload) (bool, error) {
	for _, name := range r.remotes.Names() {
		remote, err := r.remotes.Get(name)
		if err != nil || !remote.Serves(workloadGVK) {
			continue
		}
		copy := &kueue.Workload{}
		err = remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), copy)
		switch {
		case err == nil && isCopyOf(copy, wl):
			return true, nil
		case err != nil && !apierrors.IsNotFound(err):
			return false, fmt.Errorf("reading the Workload copy on %s: %w", name, err)
		}
	}
	return false, nil
}

// listRemote lists the objects of a kind that a worker's origin-filtered
// informers hold; none if the worker does not serve the kind.
func listRemote(ctx context.Context, remote *cluster.Remote, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	if !remote.Serves(gvk) {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := remote.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// health reports a cluster as dispatch sees it. A worker is lost from when
// it stopped being a place for work: its first disconnect, which counts a
// configuration error only after the worker was Active (see the
// WorkerCluster's disconnectedSince); the deletion of its WorkerCluster,
// whose jobs then follow the same policy; or for ever, for a cluster that
// has no WorkerCluster.
func (r *Reconciler) health(name string, workers map[string]*courier.WorkerCluster) Health {
	_, err := r.remotes.Get(name)
	h := Health{Connected: err == nil}
	wc, ok := workers[name]
	switch {
	case !ok:
		h.LostSince, h.LostReason, h.LostWhy = &metav1.Time{}, courier.EventWorkerLost, "has no WorkerCluster any more"
	case wc.DeletionTimestamp != nil:
		h.LostSince, h.LostReason = wc.DeletionTimestamp, courier.EventWorkerDraining
		h.LostWhy = "has been draining since its WorkerCluster was deleted at " + stamp(wc.DeletionTimestamp)
	case !h.Connected && wc.Status.DisconnectedSince != nil:
		h.LostSince, h.LostReason = wc.Status.DisconnectedSince, courier.EventWorkerLost
		h.LostWhy = "has been unreachable since " + stamp(wc.Status.DisconnectedSince)
		if active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive); active != nil &&
			active.Status == metav1.ConditionFalse && active.Reason != courier.ReasonUnreachable {
			h.LostReason = courier.EventWorkerUnusable
			h.LostWhy = fmt.Sprintf("has refused Courier's connection (%s) since %s", active.Reason, stamp(wc.Status.DisconnectedSince))
		}
	}
	return h
}

func stamp(t *metav1.Time) string { return t.UTC().Format(time.RFC3339) }
