package dispatch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
)

const (
	// clustersIndex maps a cluster name to the Workloads dispatched to or
	// nominated for it; pendingKey marks Workloads with a Pending check.
	clustersIndex = "courier.dev/clusters"
	pendingKey    = "*pending"
	// ownerIndex maps a job's UID to the Workloads it owns.
	ownerIndex = "courier.dev/owner-uid"
)

func indexWorkloads(mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &kueue.Workload{}, clustersIndex, func(o client.Object) []string {
		wl := o.(*kueue.Workload)
		keys := append([]string(nil), wl.Status.NominatedClusterNames...)
		if wl.Status.ClusterName != nil {
			keys = append(keys, *wl.Status.ClusterName)
		}
		for _, c := range wl.Status.AdmissionChecks {
			if c.State == kueue.CheckStatePending {
				return append(keys, pendingKey)
			}
		}
		return keys
	}); err != nil {
		return fmt.Errorf("indexing Workloads by cluster: %w", err)
	}
	if err := idx.IndexField(context.Background(), &kueue.Workload{}, ownerIndex, func(o client.Object) []string {
		var uids []string
		for _, ref := range o.GetOwnerReferences() {
			uids = append(uids, string(ref.UID))
		}
		return uids
	}); err != nil {
		return fmt.Errorf("indexing Workloads by owner: %w", err)
	}
	return nil
}

// workloadsForCluster queues the Workloads a WorkerCluster change may
// concern: those on or nominated for it, and those waiting for a worker.
func (r *Reconciler) workloadsForCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return append(r.listWorkloads(ctx, client.MatchingFields{clustersIndex: o.GetName()}),
		r.listWorkloads(ctx, client.MatchingFields{clustersIndex: pendingKey})...)
}

// pendingWorkloads queues the Workloads waiting on an admission check.
func (r *Reconciler) pendingWorkloads(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.listWorkloads(ctx, client.MatchingFields{clustersIndex: pendingKey})
}

// workloadsForJob queues the Workloads a manager job owns.
func (r *Reconciler) workloadsForJob(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listWorkloads(ctx, client.InNamespace(o.GetNamespace()), client.MatchingFields{ownerIndex: string(o.GetUID())})
}

func (r *Reconciler) listWorkloads(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &kueue.WorkloadList{}
	if err := r.client.List(ctx, list, opts...); err != nil {
		// A map function has no caller to return to; the periodic sweep and
		// the next event catch up.
		ctrl.LoggerFrom(ctx).Error(err, "Listing Workloads to queue")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, wl := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}})
	}
	return reqs
}

// jobObject is an empty manager job of the adapter's kind, for watches.
func jobObject(a adapter.Adapter) client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(a.GVK())
	return u
}
