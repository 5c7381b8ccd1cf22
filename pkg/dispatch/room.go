package dispatch

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// roomWakeLimit is how many waiting workloads room appearing on a worker
// queues at most. The first planned takes the room, and its new copy there
// is assumed demand from then on, so the others find none; more would be
// passes that change nothing, one alone would waste the room on a workload
// whose policy leaves that worker out.
const roomWakeLimit = 4

// roomWakeStagger spaces the passes OnRoom queues, so that the first in
// Kueue's order is planned, and its copy assumed, before the next looks.
const roomWakeStagger = 100 * time.Millisecond

// OnRoom queues, when a worker may have room it did not have, the first
// workloads, as Kueue orders a queue (highest priority, then longest
// waiting), that wait for a worker elsewhere and that its quota could hold
// now. A workload nominated only to full workers is otherwise planned
// again when its round ends, and the room would stay idle until then.
// Hand it to the cluster cache; it is called at most once a second per
// worker.
func (r *Reconciler) OnRoom(cluster string) {
	ctx := r.running
	remote, err := r.remotes.Get(cluster)
	if err != nil {
		return
	}
	// The change that brought this call may be younger than the snapshot
	// the planner shares.
	remote.RefreshCapacity()
	now := r.now()
	var waiting []waiter
	for _, ac := range r.courierChecks(ctx, "") {
		list := &kueue.WorkloadList{}
		if err := r.client.List(ctx, list, client.MatchingFields{waitingIndex: ac}, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.Log.WithName("dispatch").Error(err, "Listing waiting Workloads for a worker's new room", "cluster", cluster)
			return
		}
		for i := range list.Items {
			wl := &list.Items[i]
			if slices.Contains(wl.Status.NominatedClusterNames, cluster) {
				continue // That worker's own Kueue queues it.
			}
			if placement.HasRoomNow(r.observer.CapacityFor(remote, wl, now), placement.Workload{PodSets: workload.PodSets(wl)}) {
				waiting = append(waiting, waiter{key: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name},
					priority: ptr.Deref(wl.Spec.Priority, 0), since: workload.WaitingSince(wl, now)})
			}
		}
	}
	for i, key := range first(waiting, roomWakeLimit) {
		r.enqueue(remoteChange{key: key, after: time.Duration(i) * roomWakeStagger})
	}
}

// waiter is a workload waiting for a worker, its priority, and since when.
type waiter struct {
	key      types.NamespacedName
	priority int32
	since    time.Time
}

// first returns the keys of the first n workloads as Kueue orders a queue:
// highest priority first, then the longest waiting; ties go by namespace
// and name.
func first(ws []waiter, n int) []types.NamespacedName {
	slices.SortFunc(ws, func(a, b waiter) int {
		return cmp.Or(cmp.Compare(b.priority, a.priority), a.since.Compare(b.since),
			cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	keys := make([]types.NamespacedName, 0, min(n, len(ws)))
	for _, w := range ws[:min(n, len(ws))] {
		keys = append(keys, w.key)
	}
	return keys
}
