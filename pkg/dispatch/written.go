package dispatch

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// writtenTTL bounds how long Courier remembers its own writes: far longer
// than the manager's informer takes to deliver them.
const writtenTTL = 10 * time.Second

// ownWrites remembers, per manager Workload, the resourceVersion Courier's
// last write replaced. While the cache still shows that version, a pass
// would decide on what Courier itself already changed, and its write would
// only conflict; the event of the write is on its way and brings the next
// pass. Kept in memory: after a restart the cache starts fresh.
type ownWrites struct {
	mu    sync.Mutex
	byUID map[types.UID]ownWrite
	// swept is when expired entries were last dropped: at most once a
	// TTL, so that a write costs O(1) however many Workloads are written.
	swept time.Time
}

type ownWrite struct {
	// replaced are the versions Courier wrote over, newest last: one pass
	// may write twice (the placement, then the status).
	replaced []string
	at       time.Time
}

// maxReplaced bounds the versions remembered per Workload.
const maxReplaced = 4

func newOwnWrites() *ownWrites {
	return &ownWrites{byUID: map[types.UID]ownWrite{}}
}

// note records that Courier wrote the Workload uid over version replaced.
func (w *ownWrites) note(uid types.UID, replaced string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ow := w.byUID[uid]
	if now.Sub(ow.at) > writtenTTL {
		ow.replaced = nil
	}
	ow.replaced = append(ow.replaced, replaced)
	if len(ow.replaced) > maxReplaced {
		ow.replaced = ow.replaced[len(ow.replaced)-maxReplaced:]
	}
	ow.at = now
	w.byUID[uid] = ow
	if now.Sub(w.swept) <= writtenTTL {
		return
	}
	w.swept = now
	for u, ow := range w.byUID {
		if now.Sub(ow.at) > writtenTTL {
			delete(w.byUID, u)
		}
	}
}

// stale reports whether version is one Courier has written over lately.
func (w *ownWrites) stale(uid types.UID, version string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ow, ok := w.byUID[uid]
	return ok && now.Sub(ow.at) <= writtenTTL && slices.Contains(ow.replaced, version)
}
