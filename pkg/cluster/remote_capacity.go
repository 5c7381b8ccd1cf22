package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
	"github.com/courierdev/courier/pkg/quota"
)

var (
	workloadGVK = kueue.SchemeGroupVersion.WithKind("Workload")
	// capacityKinds are Kueue's quota objects. They are the worker's, not
	// Courier's, so their informers are not filtered by origin. They are
	// optional: a worker that does not serve them, or does not let Courier
	// list them, is used as any other, with its capacity unknown.
	capacityKinds = []schema.GroupVersionKind{
		kueue.SchemeGroupVersion.WithKind("ClusterQueue"),
		kueue.SchemeGroupVersion.WithKind("LocalQueue"),
		kueue.SchemeGroupVersion.WithKind("ResourceFlavor"),
	}
)

const (
	// capacityMaxAge is how stale Capacity may be: the planner asks for
	// every workload and every worker, and a busy worker changes its usage
	// on every admission.
	capacityMaxAge = time.Second
	// capacityWakePeriod spaces the wake-ups of the WorkerCluster
	// controller for quota changes, so that creating a thousand LocalQueues
	// does not flood the channel every worker shares.
	capacityWakePeriod = time.Second
)

// CapacityReport is a worker's capacity as the WorkerCluster status shows
// it.
type CapacityReport struct {
	// Resources are the per-flavor, per-resource sums over the worker's
	// ClusterQueues.
	Resources []courier.ResourceCapacity
	// Summary is used/nominal of the resources jobs ask for most, or why
	// the capacity is not known.
	Summary string
}

// Capacity returns what the ClusterQueue of a LocalQueue on the worker
// offers, from a snapshot at most about a second old. Known is false when
// the worker's quota is not observed, when the LocalQueue does not exist
// there, or when its ClusterQueue cannot admit now. The result is shared:
// callers must not modify it.
func (r *Remote) Capacity(namespace, localQueue string) placement.Capacity {
	return r.CapacityFor(namespace, localQueue, "", nil)
}

// CapacityFor is Capacity as manager Workload own sees it: its own waiting
// copy there is not demand against itself, and the copies Courier has just
// created and the snapshot does not show yet are added as pending: assumed,
// given whether the snapshot shows the copy of a manager Workload, returns
// their pod sets. Both come from one snapshot, so that a copy is counted
// once, by the snapshot or as assumed.
func (r *Remote) CapacityFor(namespace, localQueue string, own types.UID, assumed func(shown func(types.UID) bool) []placement.PodSet) placement.Capacity {
	s := r.capacity.current(capacityMaxAge)
	if s == nil {
		return placement.Capacity{}
	}
	c := s.capacity(namespace, localQueue, own)
	if assumed == nil {
		return c
	}
	return c.WithPending(assumed(s.shown.Has))
}

// RefreshCapacity recomputes the capacity snapshot if anything changed
// since it was taken, however young it is: for a reader woken by a change,
// which must see it.
func (r *Remote) RefreshCapacity() {
	r.capacity.current(0)
}

// CapacitySummary returns the worker's quota per flavor and resource,
// summed over its ClusterQueues (at most 64 entries, by flavor then
// resource), and a one-line summary of it, or why it is not known.
func (r *Remote) CapacitySummary() ([]courier.ResourceCapacity, string) {
	if r.capacity == nil {
		return nil, ""
	}
	if r.capacity.unknown != "" {
		return nil, r.capacity.unknown
	}
	// Fresh: the WorkerCluster controller asks when woken by a change.
	s := r.capacity.current(0)
	if s == nil {
		return nil, "unknown: the worker's Kueue objects could not be read"
	}
	return s.resources, s.summary
}

// capacityTracker keeps a worker's capacity snapshot. Readers share the
// latest one; the first reader to find it stale recomputes it while the
// others go on with the old one.
type capacityTracker struct {
	reader client.Reader
	// ctx ends when the worker's connection closes, so that a read waiting
	// for informers that never sync ends with it instead of holding the
	// caller.
	ctx context.Context
	// unknown says why the capacity cannot be known; empty when it can.
	unknown string
	// workloads is whether Courier's Workload copies can be read, for the
	// pending demand.
	workloads bool
	// tracked is whether informer handlers count the changes; without them
	// (NewRemote) every read recomputes.
	tracked bool
	changes atomic.Uint64
	wake    chan struct{}
	// room carries the changes that may have made room (see roomGrew).
	room chan struct{}

	mu   sync.Mutex
	snap atomic.Pointer[versionedSnapshot]
}

type versionedSnapshot struct {
	*capacitySnapshot
	version uint64
	at      time.Time
}

func newCapacityTracker(ctx context.Context, reader client.Reader, served sets.Set[schema.GroupVersionKind], unknown string, tracked bool) *capacityTracker {
	if unknown == "" && !served.HasAll(capacityKinds...) {
		unknown = "unknown: the worker does not serve Kueue's v1beta2 ClusterQueues, LocalQueues and ResourceFlavors"
	}
	return &capacityTracker{
		reader:    reader,
		ctx:       ctx,
		unknown:   unknown,
		workloads: served.Has(workloadGVK),
		tracked:   tracked,
		wake:      make(chan struct{}, 1),
		room:      make(chan struct{}, 1),
	}
}

// current returns a snapshot no older than maxAge unless nothing changed
// since, or nil when the capacity is not known.
func (t *capacityTracker) current(maxAge time.Duration) *capacitySnapshot {
	if t == nil || t.unknown != "" {
		return nil
	}
	s := t.snap.Load()
	if s != nil && t.tracked && (s.version == t.changes.Load() || time.Since(s.at) < maxAge) {
		return s.capacitySnapshot
	}
	if s != nil {
		if !t.mu.TryLock() {
			return s.capacitySnapshot
		}
	} else {
		t.mu.Lock()
		if s = t.snap.Load(); s != nil {
			t.mu.Unlock()
			return s.capacitySnapshot
		}
	}
	defer t.mu.Unlock()
	// Read the count first: a change while listing makes the next read
	// recompute again.
	version := t.changes.Load()
	objs, err := t.read(t.ctx)
	if err != nil {
		// A read ended by the connection's close is not worth an error.
		if t.ctx.Err() == nil {
			ctrl.Log.WithName("cluster").Error(err, "Reading a worker's Kueue objects for its capacity")
		}
		if s != nil {
			return s.capacitySnapshot
		}
		return nil
	}
	snap := computeCapacity(objs)
	t.snap.Store(&versionedSnapshot{capacitySnapshot: snap, version: version, at: time.Now()})
	return snap
}

// read lists the objects the capacity is computed from. Objects are not
// copied: computeCapacity only reads them.
func (t *capacityTracker) read(ctx context.Context) (capacityObjects, error) {
	var objs capacityObjects
	cqs, lqs, rfs := &kueue.ClusterQueueList{}, &kueue.LocalQueueList{}, &kueue.ResourceFlavorList{}
	for _, list := range []client.ObjectList{cqs, lqs, rfs} {
		if err := t.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return objs, fmt.Errorf("listing %T: %w", list, err)
		}
	}
	objs.ClusterQueues, objs.LocalQueues = cqs.Items, lqs.Items
	objs.ResourceFlavors = sets.New[string]()
	for _, rf := range rfs.Items {
		objs.ResourceFlavors.Insert(rf.Name)
	}
	if t.workloads {
		wls := &kueue.WorkloadList{}
		if err := t.reader.List(ctx, wls, client.UnsafeDisableDeepCopy); err != nil {
			return objs, fmt.Errorf("listing Workloads: %w", err)
		}
		objs.Workloads = wls.Items
	}
	return objs, nil
}

// handler counts an informer's changes. Quota objects added, removed or
// respecified also wake the WorkerCluster controller; usage, which changes
// on every admission, waits for its next periodic look. Changes that may
// have made room are signalled too (see roomGrew).
func (t *capacityTracker) handler(wakes bool) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			t.changes.Add(1)
			// The initial list is announced by the connection itself.
			if wakes && !initial {
				signal(t.wake)
				signal(t.room)
			}
		},
		UpdateFunc: func(old, obj any) {
			t.changes.Add(1)
			if wakes && generation(old) != generation(obj) {
				signal(t.wake)
			}
			if roomGrew(old, obj) {
				signal(t.room)
			}
		},
		DeleteFunc: func(obj any) {
			t.changes.Add(1)
			if wakes {
				signal(t.wake)
			}
			if freedOnDelete(obj) {
				signal(t.room)
			}
		},
	}
}

// roomGrew reports whether an update may have made room in the worker's
// quota: a quota object was respecified, a ClusterQueue's reserved quota
// fell, or a copy of Courier's stopped holding quota.
func roomGrew(old, cur any) bool {
	switch o := old.(type) {
	case *kueue.Workload:
		c, ok := cur.(*kueue.Workload)
		return ok && holds(o) && !holds(c)
	case *kueue.ClusterQueue:
		if c, ok := cur.(*kueue.ClusterQueue); ok && reservationFell(o.Status.FlavorsReservation, c.Status.FlavorsReservation) {
			return true
		}
	}
	return generation(old) != generation(cur)
}

// freedOnDelete reports whether a deleted object may have held quota: a
// copy of Courier's that held it, or one whose last state is unknown.
func freedOnDelete(obj any) bool {
	switch o := obj.(type) {
	case *kueue.Workload:
		return holds(o)
	case toolscache.DeletedFinalStateUnknown:
		_, isCopy := o.Obj.(*kueue.Workload)
		return isCopy
	}
	return false
}

// reservationFell reports whether any flavor's reserved amount of any
// resource is lower after than before.
func reservationFell(before, after []kueue.FlavorUsage) bool {
	now := quota.Totals(after)
	for fr, was := range quota.Totals(before) {
		if now[fr] < was {
			return true
		}
	}
	return false
}

func generation(obj any) int64 {
	if o, err := meta.Accessor(obj); err == nil {
		return o.GetGeneration()
	}
	return 0
}

// signal sends on ch without waiting: one signal pending stands for any
// number.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// coalesce turns the signals of ch into calls of f, at most one per
// capacityWakePeriod, the last signal of a burst included.
func coalesce(ctx context.Context, ch <-chan struct{}, f func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		if f != nil {
			f()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(capacityWakePeriod):
		}
	}
}

// capacityAccess says why the worker's capacity cannot be known, or ""
// when Courier may list every quota kind there. A refusal is not an error:
// placement works without capacity, so it costs the worker its capacity,
// not its use. Any other failure is.
func capacityAccess(ctx context.Context, c client.Client, served sets.Set[schema.GroupVersionKind]) (string, error) {
	if !served.HasAll(capacityKinds...) {
		return "", nil
	}
	var refused []string
	for _, gvk := range capacityKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := c.List(ctx, list, client.Limit(1))
		if apierrors.IsForbidden(err) {
			refused = append(refused, strings.ToLower(gvk.Kind)+"s")
			continue
		}
		if err != nil {
			return "", classify(err, "listing "+KindName(gvk))
		}
	}
	if len(refused) == 0 {
		return "", nil
	}
	return fmt.Sprintf("unknown: Courier may not list %s %s there; grant get, list and watch on them (config/worker/rbac.yaml)",
		kueue.SchemeGroupVersion.Group, strings.Join(refused, ", ")), nil
}
