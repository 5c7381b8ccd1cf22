package dispatch

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// collector sweeps the workers every gcInterval for copies whose manager
// Workload is gone, finished, another Workload of the same name, or not
// placed on or nominated for that worker, and queues that Workload. Reconciling it
// deletes those copies: orphans left by a missed event or by a worker that
// was away are collected the same way as any other. Copies that belong
// where they are cost one map look-up, so a sweep costs little however
// many Workloads run.
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

// managerWorkload is what the sweep needs to know of a manager Workload.
type managerWorkload struct {
	uid      types.UID
	clusters []string
	finished bool
}

func (c *collector) sweep(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("gc")
	list := &kueue.WorkloadList{}
	if err := c.r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing manager Workloads")
		return
	}
	known := make(map[types.NamespacedName]managerWorkload, len(list.Items))
	for i := range list.Items {
		wl := &list.Items[i]
		known[client.ObjectKeyFromObject(wl)] = managerWorkload{uid: wl.UID, clusters: clustersOf(wl), finished: isTrue(wl.Status.Conditions, kueue.WorkloadFinished)}
	}
	for _, name := range c.r.remotes.Names() {
		remote, err := c.r.remotes.Get(name)
		if err != nil {
			continue
		}
		var objs []client.Object
		if remote.Serves(workloadGVK) {
			copies := &kueue.WorkloadList{}
			if err := remote.Client.List(ctx, copies, client.UnsafeDisableDeepCopy); err != nil {
				log.Error(err, "Listing Workload copies", "cluster", name)
				continue
			}
			for i := range copies.Items {
				objs = append(objs, &copies.Items[i])
			}
		}
		for _, gvk := range c.r.copyKinds() {
			items, err := listRemote(ctx, remote, gvk, client.UnsafeDisableDeepCopy)
			if err != nil {
				log.Error(err, "Listing copies", "cluster", name, "kind", gvk.Kind)
				continue
			}
			for i := range items {
				objs = append(objs, &items[i])
			}
		}
		for _, obj := range objs {
			key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: workloadOf(obj)}
			if key.Name == "" {
				continue
			}
			wl, ok := known[key]
			uid, hasUID := obj.GetAnnotations()[courier.ManagerUIDAnnotation]
			if ok && !wl.finished && (!hasUID || types.UID(uid) == wl.uid) && slices.Contains(wl.clusters, name) {
				continue
			}
			c.r.enqueue(remoteChange{key: key})
		}
	}
}
