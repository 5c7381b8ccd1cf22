package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// createdTTL is how long a copy Courier created is remembered: far longer
// than a worker's informer takes to deliver it.
const createdTTL = 30 * time.Second

// createdCopies remembers the Workload and job copies Courier created, per
// worker, kind and manager Workload, with the copy's UID. Until the worker's informer
// delivers a copy, a pass sees none there; without this it would create
// the copy again, get AlreadyExists, and read it back: two requests for
// nothing. A copy Courier deleted since is not remembered as there. Kept in
// memory: after a restart the informers start from the workers' state.
type createdCopies struct {
	mu     sync.Mutex
	copies map[createdKey]createdCopy
	// swept is when expired copies were last dropped: at most once a TTL,
	// so that an add costs O(1) however many copies a burst creates.
	swept time.Time
}

type createdKey struct {
	cluster, kind string
	workload      types.UID
}

type createdCopy struct {
	uid types.UID
	at  time.Time
}

func newCreatedCopies() *createdCopies {
	return &createdCopies{copies: map[createdKey]createdCopy{}}
}

// add remembers that the copy uid, of kind, of Workload wl was created on
// cluster.
func (c *createdCopies) add(cluster, kind string, wl, uid types.UID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.copies[createdKey{cluster, kind, wl}] = createdCopy{uid: uid, at: now}
	if now.Sub(c.swept) <= createdTTL {
		return
	}
	c.swept = now
	for k, cc := range c.copies {
		if now.Sub(cc.at) > createdTTL {
			delete(c.copies, k)
		}
	}
}

// get returns the UID of the copy, of kind, of Workload wl created on
// cluster within createdTTL, if any.
func (c *createdCopies) get(cluster, kind string, wl types.UID, now time.Time) (types.UID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.copies[createdKey{cluster, kind, wl}]
	if !ok || now.Sub(cc.at) > createdTTL {
		return "", false
	}
	return cc.uid, true
}

// createdLately reports whether the copy of kind of Workload wl was created on
// cluster within createdTTL and not deleted by Courier since.
func (r *Reconciler) createdLately(cluster, kind string, wl types.UID) bool {
	uid, ok := r.created.get(cluster, kind, wl, r.now())
	return ok && !r.deleted.has(uid, r.now())
}
