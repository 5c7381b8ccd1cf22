// Package collector sweeps the workers for copies whose manager Workload
// is gone, finished, another Workload of the same name, or not placed on
// or nominated for that worker, and hands that Workload to the dispatcher,
// whose pass deletes them: orphans left by a missed event or by a worker
// that was away are collected the same way as any other.
package collector

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// Collector sweeps the workers every Interval. Copies that belong where
// they are cost one map look-up, so a sweep costs little however many
// Workloads run.
type Collector struct {
	Client  client.Client
	Remotes cluster.Connections
	// Kinds are the kinds, besides Kueue's Workload, of what Courier
	// creates on workers.
	Kinds    []schema.GroupVersionKind
	Interval time.Duration
	// Enqueue hands the dispatcher the manager Workload whose copies must
	// go.
	Enqueue func(types.NamespacedName)
	// Leaving reports whether Courier's own deletion is already taking a
	// copy away. A pass would find nothing to do for such a copy, so the
	// sweep passes it by until that deletion is no longer awaited; nil
	// passes none by.
	Leaving func(client.Object) bool
}

// Start sweeps until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	ticker := time.NewTicker(c.Interval)
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
func (c *Collector) NeedLeaderElection() bool { return true }

// managerWorkload is what the sweep needs to know of a manager Workload.
type managerWorkload struct {
	uid      types.UID
	clusters []string
	finished bool
}

func (c *Collector) sweep(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("gc")
	list := &kueue.WorkloadList{}
	if err := c.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing manager Workloads")
		return
	}
	known := make(map[types.NamespacedName]managerWorkload, len(list.Items))
	for i := range list.Items {
		wl := &list.Items[i]
		known[client.ObjectKeyFromObject(wl)] = managerWorkload{uid: wl.UID, clusters: workload.Clusters(wl), finished: meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)}
	}
	for _, name := range c.Remotes.Names() {
		remote, err := c.Remotes.Get(name)
		if err != nil {
			continue
		}
		var objs []client.Object
		if remote.Serves(workload.GVK) {
			copies := &kueue.WorkloadList{}
			if err := remote.Client.List(ctx, copies, client.UnsafeDisableDeepCopy); err != nil {
				log.Error(err, "Listing Workload copies", "cluster", name)
				continue
			}
			for i := range copies.Items {
				objs = append(objs, &copies.Items[i])
			}
		}
		for _, gvk := range c.Kinds {
			items, err := remote.List(ctx, gvk, client.UnsafeDisableDeepCopy)
			if err != nil {
				log.Error(err, "Listing copies", "cluster", name, "kind", gvk.Kind)
				continue
			}
			for i := range items {
				objs = append(objs, &items[i])
			}
		}
		for _, obj := range objs {
			if key, ok := c.toCollect(obj, name, known); ok {
				c.Enqueue(key)
			}
		}
	}
}

// toCollect returns the manager Workload of obj, a copy on worker
// cluster, if the copy has no place there: its Workload is gone, finished,
// another Workload of the same name, or not placed on or nominated for
// cluster. A copy Courier is deleting already is left to that deletion.
func (c *Collector) toCollect(obj client.Object, cluster string, known map[types.NamespacedName]managerWorkload) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: workload.Of(obj)}
	if key.Name == "" {
		return key, false
	}
	wl, ok := known[key]
	uid, hasUID := obj.GetAnnotations()[courier.ManagerUIDAnnotation]
	if ok && !wl.finished && (!hasUID || types.UID(uid) == wl.uid) && slices.Contains(wl.clusters, cluster) {
		return key, false
	}
	return key, c.Leaving == nil || !c.Leaving(obj)
}
