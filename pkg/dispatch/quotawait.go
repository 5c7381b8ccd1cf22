package dispatch

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/quota"
)

// quotaIndex maps a ClusterQueue name to the Workloads that hold its quota
// and have not finished.
const quotaIndex = "courier.dev/quota"

// holdsQuota names the ClusterQueue whose quota wl holds while unfinished.
func holdsQuota(wl *kueue.Workload) []string {
	if wl.Status.Admission == nil || meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return nil
	}
	return []string{string(wl.Status.Admission.ClusterQueue)}
}

// quotaEvents queues, when a ClusterQueue comes to want quota that it did
// not want before, the Workloads of ended jobs that hold such quota: the
// planner left finishing them to the manager's Kueue while nothing waited
// for their quota (plan.kueueFinishesIn), and now writes Finished itself.
// A Workload whose job still runs keeps its quota either way, and one
// Courier does not dispatch is not its to finish, so neither is queued.
func (r *Reconciler) quotaEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.queueQuotaHolders(ctx, nil, e.Object.(*kueue.ClusterQueue), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.queueQuotaHolders(ctx, e.ObjectOld.(*kueue.ClusterQueue), e.ObjectNew.(*kueue.ClusterQueue), q)
		},
	}
}

// queueQuotaHolders queues the ended jobs' Workloads whose quota cur, once
// old, newly wants: those of cur itself, and, if cur is in a cohort, those
// of every ClusterQueue in a cohort, as quota.Wanted counts them.
func (r *Reconciler) queueQuotaHolders(ctx context.Context, old, cur *kueue.ClusterQueue, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if !mayWantMore(old, cur) {
		return
	}
	holders := []string{cur.Name}
	if cur.Spec.CohortName != "" {
		all := &kueue.ClusterQueueList{}
		if err := r.client.List(ctx, all, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing ClusterQueues to queue the Workloads holding quota", "clusterQueue", cur.Name)
			return
		}
		holders = holders[:0]
		for _, cq := range all.Items {
			if cq.Spec.CohortName != "" {
				holders = append(holders, cq.Name)
			}
		}
	}
	newly := newlyWants(old, cur)
	for _, holder := range holders {
		list := &kueue.WorkloadList{}
		if err := r.client.List(ctx, list, client.MatchingFields{quotaIndex: holder}, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the Workloads holding quota", "clusterQueue", holder)
			return
		}
		for i := range list.Items {
			wl := &list.Items[i]
			if newly(quota.Held(wl.Status.Admission), holder) && r.observer.LeftToKueue(ctx, wl) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}})
			}
		}
	}
}

// mayWantMore reports whether cur, a ClusterQueue that was old (nil when
// it is new), may want quota that old did not: something waits in it, and
// what decides how much room it has changed (its pending count from none,
// its reservations, its quota, its cohort). It spares the Workload lists
// for the many status writes of a busy ClusterQueue that change neither.
func mayWantMore(old, cur *kueue.ClusterQueue) bool {
	if cur.Status.PendingWorkloads == 0 {
		return false
	}
	return old == nil || old.Status.PendingWorkloads == 0 || old.Spec.CohortName != cur.Spec.CohortName ||
		!equality.Semantic.DeepEqual(old.Status.FlavorsReservation, cur.Status.FlavorsReservation) ||
		!equality.Semantic.DeepEqual(old.Spec.ResourceGroups, cur.Spec.ResourceGroups)
}

// newlyWants reports whether cur, a ClusterQueue that was old (nil when it
// is new), wants quota held by a Workload admitted to the ClusterQueue
// named holder, and old did not. A ClusterQueue other than the holder wants
// it only while in a cohort; the caller lists only holders in a cohort
// then. Each ClusterQueue's reservations are read once, for all holders.
func newlyWants(old, cur *kueue.ClusterQueue) func(held quota.Amounts, holder string) bool {
	wants := func(cq *kueue.ClusterQueue) func(quota.Amounts, string) bool {
		if cq == nil {
			return func(quota.Amounts, string) bool { return false }
		}
		tight := quota.TightFor(cq)
		return func(held quota.Amounts, holder string) bool {
			return (cq.Name == holder || cq.Spec.CohortName != "") && tight(held)
		}
	}
	was, is := wants(old), wants(cur)
	return func(held quota.Amounts, holder string) bool { return !was(held, holder) && is(held, holder) }
}
