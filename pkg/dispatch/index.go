package dispatch

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// Indexes of manager Workloads, so that an event on another object queues
// exactly the Workloads it concerns.
const (
	// clustersIndex maps a cluster name to the Workloads placed on,
	// dispatched to or nominated for it.
	clustersIndex = "courier.dev/clusters"
	// pendingCheckIndex maps an admission check name to the Workloads on
	// which that check is Pending.
	pendingCheckIndex = "courier.dev/pending-check"
	// checkIndex maps an admission check name to the Workloads that carry
	// that check, in any state.
	checkIndex = "courier.dev/check"
	// ownerIndex maps a job's UID to the Workloads it owns.
	ownerIndex = "courier.dev/owner-uid"
	// waitingIndex maps an admission check name to the Workloads on which
	// that check is Pending while nominated workers hold their copies: those
	// waiting for a worker to admit them.
	waitingIndex = "courier.dev/waiting"
)

func indexWorkloads(mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	indexes := map[string]client.IndexerFunc{
		clustersIndex:     func(o client.Object) []string { return workload.Clusters(o.(*kueue.Workload)) },
		pendingCheckIndex: func(o client.Object) []string { return pendingChecks(o.(*kueue.Workload)) },
		waitingIndex: func(o client.Object) []string {
			if wl := o.(*kueue.Workload); waitsForAdmission(wl) {
				return pendingChecks(wl)
			}
			return nil
		},
		checkIndex: func(o client.Object) []string {
			var names []string
			for _, c := range o.(*kueue.Workload).Status.AdmissionChecks {
				names = append(names, string(c.Name))
			}
			return names
		},
		quotaIndex: func(o client.Object) []string { return holdsQuota(o.(*kueue.Workload)) },
		ownerIndex: func(o client.Object) []string {
			var uids []string
			for _, ref := range o.GetOwnerReferences() {
				uids = append(uids, string(ref.UID))
			}
			return uids
		},
	}
	for name, extract := range indexes {
		if err := idx.IndexField(context.Background(), &kueue.Workload{}, name, extract); err != nil {
			return fmt.Errorf("indexing Workloads by %s: %w", name, err)
		}
	}
	return nil
}

// pendingChecks names the admission checks Pending on a Workload.
func pendingChecks(wl *kueue.Workload) []string {
	var names []string
	for _, c := range wl.Status.AdmissionChecks {
		if c.State == kueue.CheckStatePending {
			names = append(names, string(c.Name))
		}
	}
	return names
}

// courierWorkloads lets through the events of Workloads Courier cares
// about (see isCourierWorkload). Every other Workload in the cluster is
// none of its business, and costs it nothing.
func (r *Reconciler) courierWorkloads() predicate.Predicate {
	ours := func(o client.Object) bool {
		wl, ok := o.(*kueue.Workload)
		return ok && r.isCourierWorkload(wl)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return ours(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ours(e.ObjectNew) || ours(e.ObjectOld) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return ours(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return ours(e.Object) },
	}
}

// isCourierWorkload reports whether Courier placed wl or one of its
// AdmissionChecks is on it, the checks read from the cache.
func (r *Reconciler) isCourierWorkload(wl *kueue.Workload) bool {
	// This runs in informers' handlers; a cache read that waits for the
	// AdmissionCheck informer to sync would hold that informer, and the
	// manager's shutdown, for ever if the manager stops first.
	return courierWorkload(wl, func(name string) bool { return r.isCourierCheck(r.running, name) })
}

// courierWorkload reports whether wl carries Courier's placement record or
// a check that isCourier names as one of Courier's AdmissionChecks.
func courierWorkload(wl *kueue.Workload, isCourier func(check string) bool) bool {
	if _, ok := wl.Annotations[courier.PlacementAnnotation]; ok {
		return true
	}
	return slices.ContainsFunc(wl.Status.AdmissionChecks, func(c kueue.AdmissionCheckState) bool { return isCourier(string(c.Name)) })
}

// isCourierCheck reports whether the named AdmissionCheck is served by
// Courier, from the cache.
func (r *Reconciler) isCourierCheck(ctx context.Context, name string) bool {
	ac := &kueue.AdmissionCheck{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, ac); err != nil {
		return false
	}
	return ac.Spec.ControllerName == courier.ControllerName
}

// usabilityChanged lets through the WorkerCluster changes that can change
// where jobs may go: its connection, the kinds it serves, its labels, its
// deletion, and what becomes of its jobs once it is lost (its policy, its
// fence, its revocation). Status writes that change nothing of that are skipped.
func usabilityChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld.(*courier.WorkerCluster), e.ObjectNew.(*courier.WorkerCluster)
		active := func(wc *courier.WorkerCluster) [2]string {
			c := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive)
			if c == nil {
				return [2]string{}
			}
			return [2]string{string(c.Status), c.Reason}
		}
		fence := func(wc *courier.WorkerCluster) bool {
			return meta.IsStatusConditionTrue(wc.Status.Conditions, courier.WorkerClusterFenceReady)
		}
		return active(old) != active(cur) || fence(old) != fence(cur) ||
			!slices.Equal(old.Status.UnavailableKinds, cur.Status.UnavailableKinds) ||
			!equality.Semantic.DeepEqual(old.Status.DisconnectedSince, cur.Status.DisconnectedSince) ||
			!equality.Semantic.DeepEqual(old.Status.RevokedSince, cur.Status.RevokedSince) ||
			!equality.Semantic.DeepEqual(old.Spec.LostWorkerPolicy, cur.Spec.LostWorkerPolicy) ||
			!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
			!equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp)
	}}
}

// jobChanged lets through the manager job changes a plan can act on: its
// creation and deletion, and updates of its spec or metadata. Updates of
// its status alone are skipped: Courier writes that status itself, as the
// mirror of the worker's copy, and reads it back only to compare it with
// the copy, on the pass a change of the copy brings. Without this, each
// mirror came back as an event that queued a pass finding nothing to do,
// unless another event had queued one already.
func jobChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return specOrMetaChanged(e.ObjectOld, e.ObjectNew) }}
}

// workloadsForCluster queues the Workloads a WorkerCluster change may
// concern: those on or nominated for it, and those waiting for a worker.
func (r *Reconciler) workloadsForCluster(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.listWorkloads(ctx, nil, client.MatchingFields{clustersIndex: o.GetName()})
	for _, ac := range r.courierChecks(ctx, "") {
		reqs = append(reqs, r.listWorkloads(ctx, nil, client.MatchingFields{pendingCheckIndex: ac})...)
	}
	return reqs
}

// checkEvents queues, for a change of a Courier AdmissionCheck, the
// Workloads waiting on it, and for its creation or deletion every Workload
// that carries it: those it placed go on without it and say so, and say so
// no more when it is back.
func (r *Reconciler) checkEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	waiting := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.(*kueue.AdmissionCheck).Spec.ControllerName != courier.ControllerName {
			return nil
		}
		return r.listWorkloads(ctx, nil, client.MatchingFields{pendingCheckIndex: o.GetName()})
	})
	carrying := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if o.(*kueue.AdmissionCheck).Spec.ControllerName != courier.ControllerName {
			return
		}
		for _, req := range r.listWorkloads(ctx, nil, client.MatchingFields{checkIndex: o.GetName()}) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			carrying(ctx, e.Object, q)
		},
		UpdateFunc:  waiting.Update,
		GenericFunc: waiting.Generic,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			carrying(ctx, e.Object, q)
		},
	}
}

// workloadsForPolicy queues the Workloads waiting on the AdmissionChecks
// that name a DispatchPolicy.
func (r *Reconciler) workloadsForPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, ac := range r.courierChecks(ctx, o.GetName()) {
		reqs = append(reqs, r.listWorkloads(ctx, nil, client.MatchingFields{pendingCheckIndex: ac})...)
	}
	return reqs
}

// courierChecks names Courier's AdmissionChecks, those naming policy if it
// is set.
func (r *Reconciler) courierChecks(ctx context.Context, policy string) []string {
	list := &kueue.AdmissionCheckList{}
	if err := r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing AdmissionChecks to queue their Workloads")
		return nil
	}
	var names []string
	for _, ac := range list.Items {
		if ac.Spec.ControllerName != courier.ControllerName {
			continue
		}
		if policy == "" || (ac.Spec.Parameters != nil && ac.Spec.Parameters.Name == policy) {
			names = append(names, ac.Name)
		}
	}
	return names
}

// workloadsForJob queues the Courier Workloads a manager job owns. The
// watch sees every job of a kind Courier carries; the Workloads of the
// rest (another dispatcher's, as when MultiKueue runs beside Courier, or a
// queue without Courier's check) are no more its business here than in
// courierWorkloads, and a pass on one would only find it disowned.
func (r *Reconciler) workloadsForJob(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listWorkloads(ctx, r.isCourierWorkload, client.InNamespace(o.GetNamespace()), client.MatchingFields{ownerIndex: string(o.GetUID())})
}

// listWorkloads queues the Workloads the options list that keep, if set,
// reports true for.
func (r *Reconciler) listWorkloads(ctx context.Context, keep func(*kueue.Workload) bool, opts ...client.ListOption) []reconcile.Request {
	list := &kueue.WorkloadList{}
	if err := r.client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		// A map function has no caller to return to; the periodic sweep and
		// the next event catch up.
		ctrl.LoggerFrom(ctx).Error(err, "Listing Workloads to queue")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if wl := &list.Items[i]; keep == nil || keep(wl) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}})
		}
	}
	return reqs
}

// jobObject is an empty manager job of the adapter's kind, for watches.
func jobObject(a adapter.Adapter) client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(a.GVK())
	return u
}

// waitsForAdmission reports whether a manager Workload waits for a
// nominated worker to admit it: not placed, not being deleted, and with
// copies on the workers nominated.
func waitsForAdmission(wl *kueue.Workload) bool {
	if _, placed := wl.Annotations[courier.PlacementAnnotation]; placed || wl.Status.ClusterName != nil || wl.DeletionTimestamp != nil {
		return false
	}
	return len(wl.Status.NominatedClusterNames) > 0
}
