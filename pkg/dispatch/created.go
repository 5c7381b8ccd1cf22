package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// createdTTL is how long a copy Courier created counts as there while the
// worker's informer does not show it: far longer than an informer takes to
// deliver it.
const createdTTL = 30 * time.Second

// createdKeep is how long a copy Courier created is remembered: past
// createdTTL it still counts as there while the worker's informer of its
// kind has not read up to its creation (a watch backing off after the
// worker's API server restarted more than once; soak.md, finding 18).
const createdKeep = 5 * time.Minute

// createdCopies remembers the Workload and job copies Courier created, per
// worker, kind and manager Workload, with the copy's UID and the
// resourceVersion its create returned. Until the worker's informer
// delivers a copy, a pass sees none there; without this it would create
// the copy again, get AlreadyExists, and read it back: two requests for
// nothing; or, for a job copy, dispatch the job elsewhere while the copy
// may run. A copy Courier deleted since is not remembered as there. Kept
// in memory: after a restart the informers start from the workers' state.
type createdCopies struct {
	mu     sync.Mutex
	copies map[createdKey]createdCopy
	// swept is when expired copies were last dropped: at most once a
	// createdTTL, so that an add costs O(1) however many copies a burst
	// creates.
	swept time.Time
}

type createdKey struct {
	cluster, kind string
	workload      types.UID
}

type createdCopy struct {
	uid types.UID
	// version is the resourceVersion the create returned.
	version string
	at      time.Time
}

func newCreatedCopies() *createdCopies {
	return &createdCopies{copies: map[createdKey]createdCopy{}}
}

// add remembers that the copy uid, of kind, of Workload wl was created on
// cluster, at version.
func (c *createdCopies) add(cluster, kind string, wl, uid types.UID, version string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.copies[createdKey{cluster, kind, wl}] = createdCopy{uid: uid, version: version, at: now}
	if now.Sub(c.swept) <= createdTTL {
		return
	}
	c.swept = now
	for k, cc := range c.copies {
		if now.Sub(cc.at) > createdKeep {
			delete(c.copies, k)
		}
	}
}

// get returns the copy, of kind, of Workload wl created on cluster within
// createdKeep, if any.
func (c *createdCopies) get(cluster, kind string, wl types.UID, now time.Time) (createdCopy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.copies[createdKey{cluster, kind, wl}]
	if !ok || now.Sub(cc.at) > createdKeep {
		return createdCopy{}, false
	}
	return cc, true
}

// stillUnseen reports whether a copy Courier created, that the worker's
// informer does not show, counts as there: within createdTTL of its
// create, and after that while the informer has not read up to it
// (reached says whether it has). A copy Courier deleted since does not.
func stillUnseen(cc createdCopy, deleted bool, now time.Time, reached func(version string) bool) bool {
	switch {
	case deleted:
		return false
	case now.Sub(cc.at) <= createdTTL:
		return true
	default:
		return !reached(cc.version)
	}
}

// createdLately reports whether the copy of gvk of Workload wl that
// Courier created on cluster counts as there though the worker's informer
// does not show it (stillUnseen).
func (r *Reconciler) createdLately(cluster string, gvk schema.GroupVersionKind, wl types.UID) bool {
	now := r.now()
	cc, ok := r.created.get(cluster, gvk.Kind, wl, now)
	if !ok {
		return false
	}
	return stillUnseen(cc, r.deleted.has(cc.uid, now), now, func(version string) bool {
		remote, err := r.remotes.Get(cluster)
		// A worker out of reach holds the job back by itself.
		return err != nil || remote.Reached(gvk, version)
	})
}
