// Package placementdecision publishes where each job runs in the standard
// form of SIG-Multicluster, a PlacementDecision (multicluster.x-k8s.io,
// KEP-5313), so that inventory tools, dashboards and other controllers see
// it without reading Courier's own types. It keeps one PlacementDecision per
// placed manager Workload, of the same name and namespace and owned by it:
// its one decision names the worker's ClusterProfile, or, for a worker
// reached by a kubeconfig Secret, the WorkerCluster. It reads the placement
// the dispatcher records on the Workload (courier.dev/placement) and never
// writes the Workload. It costs a create per placed job, and an update per
// new placement, so it runs only when the Configuration turns it on.
package placementdecision

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=placementdecisions,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters,verbs=get;list;watch

// placedOnIndex maps a worker's name to the manager Workloads whose
// recorded placement names it.
const placedOnIndex = "courier.dev/placed-on"

// Reconciler keeps each placed Workload's PlacementDecision up to date.
type Reconciler struct {
	client client.Client
}

// SetupWithManager registers the controller.
func SetupWithManager(mgr ctrl.Manager) error {
	r := &Reconciler{client: mgr.GetClient()}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kueue.Workload{}, placedOnIndex, func(o client.Object) []string {
		if p, err := workload.PlacementOf(o.(*kueue.Workload)); err == nil && p != nil {
			return []string{p.Cluster}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing Workloads by placement: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("placementdecision").
		For(&kueue.Workload{}, builder.WithPredicates(placementChanged())).
		Owns(&inventory.PlacementDecision{}).
		Watches(&courier.WorkerCluster{}, handler.EnqueueRequestsFromMapFunc(r.workloadsPlacedOn),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reconcile writes the Workload's PlacementDecision when it differs from
// what the Workload's placement says. A Workload that was never placed gets
// none; one whose placement is of an earlier admission keeps its
// PlacementDecision, with no decisions, until it is placed again. The
// Workload's deletion takes the PlacementDecision with it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &kueue.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, wl); err != nil || wl.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	current := &inventory.PlacementDecision{}
	err := r.client.Get(ctx, req.NamespacedName, current)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("getting PlacementDecision: %w", err)
	}
	exists := err == nil
	placement, err := workload.PlacementOf(wl)
	if err != nil || (placement == nil && !exists) {
		// Courier's record is what is published: none, nothing to say.
		return reconcile.Result{}, nil
	}
	var wc *courier.WorkerCluster
	if placement != nil {
		wc = &courier.WorkerCluster{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: placement.Cluster}, wc); err != nil {
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("getting WorkerCluster %s: %w", placement.Cluster, err)
			}
			wc = nil
		}
	}
	want := Decision(wl, placement, wc)
	if !exists {
		if err := r.client.Create(ctx, want); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating PlacementDecision: %w", client.IgnoreAlreadyExists(err))
		}
		ctrl.LoggerFrom(ctx).V(4).Info("Published placement", "decisions", len(want.Decisions))
		return reconcile.Result{}, nil
	}
	if equality.Semantic.DeepEqual(want.Decisions, current.Decisions) && want.SchedulerName == current.SchedulerName &&
		equality.Semantic.DeepEqual(want.Labels, current.Labels) {
		return reconcile.Result{}, nil
	}
	current.Labels, current.Decisions, current.SchedulerName = want.Labels, want.Decisions, want.SchedulerName
	if err := r.client.Update(ctx, current); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating PlacementDecision: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Updated published placement", "decisions", len(want.Decisions))
	return reconcile.Result{}, nil
}

// placementChanged lets through the Workload events that can change its
// PlacementDecision: a Workload that appears with a placement, and a change
// of its placement or of its eviction count, which makes the placement one
// of an earlier admission. Status changes of a running job are most of a
// Workload's updates; they pass over.
func placementChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			_, ok := e.Object.GetAnnotations()[courier.PlacementAnnotation]
			return ok
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, cur := e.ObjectOld.(*kueue.Workload), e.ObjectNew.(*kueue.Workload)
			return old.Annotations[courier.PlacementAnnotation] != cur.Annotations[courier.PlacementAnnotation] ||
				workload.Evictions(old) != workload.Evictions(cur)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// workloadsPlacedOn queues the Workloads placed on a WorkerCluster whose
// spec changed: it may now name another ClusterProfile.
func (r *Reconciler) workloadsPlacedOn(ctx context.Context, o client.Object) []reconcile.Request {
	list := &kueue.WorkloadList{}
	if err := r.client.List(ctx, list, client.MatchingFields{placedOnIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Workloads placed on WorkerCluster", "workerCluster", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, wl := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&wl)})
	}
	return reqs
}
