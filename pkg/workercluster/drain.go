package workercluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// drainPeriod is how often a deleted WorkerCluster looks again at what
// still needs its worker. Workloads leave on their own schedule (they
// finish, or move after workerLostTimeout); looking now and then keeps this
// controller free of a watch on every Workload.
const drainPeriod = 10 * time.Second

// maxListed bounds how many Workloads the Draining condition names.
const maxListed = 5

// Placements tells the WorkerCluster controller what the dispatcher still
// has on a worker; the dispatcher is the real one.
type Placements interface {
	// PlacedOn lists the manager Workloads that still need the worker.
	PlacedOn(ctx context.Context, cluster string) ([]types.NamespacedName, error)
	// Release deletes what Courier created on the worker and still holds
	// there, releasing its finalizers; a worker out of reach is left alone.
	Release(ctx context.Context, cluster string) error
}

// drain takes a deleted WorkerCluster through its removal:
//
//  1. While Workloads still need the worker, the Draining condition names
//     them. The dispatcher nominates the worker no more and counts it lost
//     from the deletion: a job still running there workerLostTimeout later
//     is dispatched elsewhere, after its copies there are removed.
//  2. Then Courier's objects still on the worker are released and deleted,
//     if the worker can be reached.
//  3. Then the finalizer goes, and with it the WorkerCluster.
//
// It reports whether the WorkerCluster is gone, and otherwise the Draining
// condition to show.
func (r *Reconciler) drain(ctx context.Context, wc *courier.WorkerCluster) (bool, metav1.Condition, error) {
	cond := metav1.Condition{Type: courier.WorkerClusterDraining, Status: metav1.ConditionTrue, ObservedGeneration: wc.Generation,
		LastTransitionTime: metav1.NewTime(r.now())}
	if !controllerutil.ContainsFinalizer(wc, courier.DrainFinalizer) {
		return true, cond, nil // Another finalizer holds it; not Courier's business.
	}
	placed, err := r.placements.PlacedOn(ctx, wc.Name)
	if err != nil {
		return false, cond, err
	}
	if len(placed) > 0 {
		names := make([]string, 0, maxListed)
		for _, key := range placed[:min(len(placed), maxListed)] {
			names = append(names, key.String())
		}
		if len(placed) > maxListed {
			names = append(names, fmt.Sprintf("and %d more", len(placed)-maxListed))
		}
		cond.Reason = courier.ReasonWorkloadsPlaced
		cond.Message = fmt.Sprintf("%d workloads still need this worker (%s). They run on; those still running at %s, workerLostTimeout after the deletion, are dispatched elsewhere.",
			len(placed), strings.Join(names, ", "), wc.DeletionTimestamp.Add(r.lost.Timeout).UTC().Format(time.RFC3339))
		return false, cond, nil
	}
	if err := r.placements.Release(ctx, wc.Name); err != nil {
		return false, cond, fmt.Errorf("releasing Courier's objects on the worker: %w", err)
	}
	if err := r.holdCredentials(ctx, wc, true); err != nil {
		return false, cond, err
	}
	before := wc.DeepCopy()
	controllerutil.RemoveFinalizer(wc, courier.DrainFinalizer)
	if err := r.client.Patch(ctx, wc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, cond, fmt.Errorf("removing the drain finalizer: %w", client.IgnoreNotFound(err))
	}
	r.recorder.Eventf(wc, nil, corev1.EventTypeNormal, courier.ReasonReleasing, "Drain", "No workload needs the worker any more; released Courier's objects there.")
	ctrl.LoggerFrom(ctx).V(2).Info("Drained WorkerCluster")
	return true, cond, nil
}

// deleted lets through the deletion of a WorkerCluster, which does not
// change its generation when a finalizer holds it.
func deleted() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}
