package dispatch

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
)

// collector sweeps the workers every gcInterval and queues the manager
// Workload of every copy it finds. Reconciling a Workload that is gone, or
// dispatched elsewhere, deletes its copies: orphans left by a missed event
// or by a worker that was away are collected the same way as any other.
type collector struct {
	r *Reconciler
}

func (c *collector) Start(ctx context.Context) error {
	ticker := time.NewTicker(c.r.opts.GCInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			c.sweep(ctx)
		}
	}
}

// NeedLeaderElection: only the leader deletes.
func (c *collector) NeedLeaderElection() bool { return true }

func (c *collector) sweep(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("gc")
	for _, name := range c.r.cache.Names() {
		remote, err := c.r.cache.Get(name)
		if err != nil {
			continue
		}
		var objs []client.Object
		if remote.Serves(workloadGVK) {
			list := &kueue.WorkloadList{}
			if err := remote.Client.List(ctx, list); err != nil {
				log.Error(err, "Listing Workload copies", "cluster", name)
				continue
			}
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
		}
		kinds := []schema.GroupVersionKind{adapter.PodGroupGVK, adapter.SchedulingWorkloadGVK}
		for _, a := range c.r.adapters {
			kinds = append(kinds, a.GVK())
		}
		for _, gvk := range kinds {
			items, err := listRemote(ctx, remote, gvk)
			if err != nil {
				log.Error(err, "Listing copies", "cluster", name, "kind", gvk.Kind)
				continue
			}
			for i := range items {
				objs = append(objs, &items[i])
			}
		}
		for _, obj := range objs {
			c.r.OnRemoteChange(name, obj)
		}
	}
}
