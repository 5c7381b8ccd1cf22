package expect

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/pkg/placement"
)

// Created records a copy Courier created. Until the worker's informer
// delivers it, a pass would see none there. A create whose outcome is
// unknown (a server error that may follow a committed write) has no UID
// and no version: it counts as there for CreatedTTL, and no longer.
func (e *Expectations) Created(key CopyKey, uid types.UID, version string, now time.Time) {
	e.created.put(key, Created{UID: uid, Version: version, At: now}, now)
}

// CreatedCopy returns the copy Courier created under key within
// CreatedKeep, if any.
func (e *Expectations) CreatedCopy(key CopyKey, now time.Time) (Created, bool) {
	c, _, ok := e.created.get(key, now)
	return c, ok
}

// StillUnseen reports whether a copy Courier created, that the worker's
// informer does not show, counts as there: within CreatedTTL of its
// create, and after that while the informer has not read up to it
// (reached says whether it has). A copy Courier deleted since does not.
func (e *Expectations) StillUnseen(c Created, now time.Time, reached func(version string) bool) bool {
	switch {
	case e.IsDeleted(c.UID, now):
		return false
	case now.Sub(c.At) <= CreatedTTL:
		return true
	default:
		return !reached(c.Version)
	}
}

// Deleted records that Courier deleted the remote object uid: an informer
// that has not seen the delete yet must not make it count. A new object
// has a new UID, so it counts at once.
func (e *Expectations) Deleted(uid types.UID, now time.Time) {
	if uid == "" {
		return // Not an object an API server returned.
	}
	e.deleted.put(uid, struct{}{}, now)
}

// IsDeleted reports whether Courier deleted the remote object uid lately.
func (e *Expectations) IsDeleted(uid types.UID, now time.Time) bool {
	return e.deleted.has(uid, now)
}

// Mirrored records that the final status of the finished job copy uid,
// read from its worker, is on the manager's job.
func (e *Expectations) Mirrored(uid types.UID, now time.Time) {
	if uid != "" {
		e.mirrored.put(uid, struct{}{}, now)
	}
}

// MirroredAt returns when the job copy uid's final status went to the
// manager, if it did within MirroredTTL.
func (e *Expectations) MirroredAt(uid types.UID, now time.Time) (time.Time, bool) {
	_, at, ok := e.mirrored.get(uid, now)
	return at, ok
}

// StatusMirrored records that the status of the manager job uid, still
// running, was mirrored from its copy at now.
func (e *Expectations) StatusMirrored(uid types.UID, now time.Time) {
	if uid != "" {
		e.statusAt.put(uid, struct{}{}, now)
	}
}

// StatusMirroredAt returns when the status of the manager job uid was last
// mirrored before its end, if within StatusMirrorTTL: a change that follows
// soon after waits, so that a job's start costs the manager a write or two,
// not one per step of its pods.
func (e *Expectations) StatusMirroredAt(uid types.UID, now time.Time) (time.Time, bool) {
	_, at, ok := e.statusAt.get(uid, now)
	return at, ok
}

// Assume counts the copy of Workload wl just created on cluster as demand
// there, as schedulers assume a pod they placed, until the capacity
// snapshot shows it: Workloads planned in the same second would otherwise
// all see the same snapshot, and a burst would all go to the roomiest
// worker.
func (e *Expectations) Assume(cluster string, wl types.UID, d Demand, now time.Time) {
	e.mu.Lock()
	t := e.assumed[cluster]
	if t == nil {
		t = newTable[types.UID, Demand](AssumedTTL, AssumedTTL)
		e.assumed[cluster] = t
	}
	e.mu.Unlock()
	t.put(wl, d, now)
}

// Unassume drops the assumed copy of Workload wl on cluster: the snapshot
// counts it from now on, or it is gone. One deleted soon after it was
// shown must not come back as assumed demand.
func (e *Expectations) Unassume(cluster string, wl types.UID) {
	e.mu.Lock()
	t := e.assumed[cluster]
	e.mu.Unlock()
	if t != nil {
		t.remove(wl, nil)
	}
}

// Assumed returns the pod sets assumed on cluster for queue, but those of
// Workload except, whose own copy is no demand on top of itself, and
// leaving out the copies the capacity snapshot shows (shown, if not nil),
// which it returns for the act step to Unassume: the snapshot counts them.
func (e *Expectations) Assumed(cluster, queue string, except types.UID, now time.Time, shown func(types.UID) bool) (podSets []placement.PodSet, seen []types.UID) {
	e.mu.Lock()
	t := e.assumed[cluster]
	e.mu.Unlock()
	if t == nil {
		return nil, nil
	}
	t.each(now, func(uid types.UID, d Demand) bool {
		switch {
		case shown != nil && shown(uid):
			seen = append(seen, uid)
		case uid != except && d.Queue == queue:
			podSets = append(podSets, d.PodSets...)
		}
		return true
	})
	return podSets, seen
}

// OwnerDeleted reports whether a remote object is on its way out with its
// controller, a copy Courier deleted: the worker's garbage collector
// deletes a Workload copy that its Kueue made the job copy's.
func (e *Expectations) OwnerDeleted(obj metav1.Object, now time.Time) bool {
	owner := metav1.GetControllerOfNoCopy(obj)
	return owner != nil && e.IsDeleted(owner.UID, now)
}

// Leaving reports whether Courier's own deletion is taking a remote object
// away: Courier deleted it, or the copy that controls it, lately. A pass
// counts such an object gone.
func (e *Expectations) Leaving(obj metav1.Object, now time.Time) bool {
	return e.IsDeleted(obj.GetUID(), now) || e.OwnerDeleted(obj, now)
}
