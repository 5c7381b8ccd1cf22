package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deletedTTL is how long a deleted remote object is remembered: far longer
// than a worker's informer takes to see the delete.
const deletedTTL = 2 * time.Minute

// deletedObjects remembers the remote objects Courier deleted, by UID, so
// that an informer that has not seen the delete yet does not make them
// count: a Workload copy deleted a moment ago must not win a dispatch. A
// new copy has a new UID, so it counts at once. Kept in memory: after a
// restart the informers start from the worker's current state.
type deletedObjects struct {
	mu   sync.Mutex
	uids map[types.UID]time.Time
}

func newDeletedObjects() *deletedObjects {
	return &deletedObjects{uids: map[types.UID]time.Time{}}
}

// add remembers that the object with uid was deleted at now.
func (d *deletedObjects) add(uid types.UID, now time.Time) {
	if uid == "" {
		return // Not an object an API server returned.
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.uids[uid] = now
	// Forgetting here keeps the map as small as the deletes of the last
	// deletedTTL, without a goroutine of its own.
	for u, at := range d.uids {
		if now.Sub(at) > deletedTTL {
			delete(d.uids, u)
		}
	}
}

// has reports whether the object with uid was deleted within deletedTTL.
func (d *deletedObjects) has(uid types.UID, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.uids[uid]
	return ok && now.Sub(at) <= deletedTTL
}
