package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deletedTTL is how long a deleted remote object is remembered: far longer
// than a worker's informer takes to see the delete.
const deletedTTL = 2 * time.Minute

// finalMirroredTTL is how long a job copy whose final status reached the
// manager is remembered: far longer than the passes that finish its
// Workload take, conflicts included.
const finalMirroredTTL = 2 * time.Minute

// uidMemory remembers remote objects by UID for a while. Courier keeps two:
//
//   - the objects it deleted, so that an informer that has not seen the
//     delete yet does not make them count: a Workload copy deleted a moment
//     ago must not win a dispatch. A new copy has a new UID, so it counts
//     at once.
//   - the finished job copies whose final status, read from the worker's
//     API server, is on the manager's job: a pass that follows (the status
//     write conflicted, say) need not read the worker again.
//
// Kept in memory: after a restart the informers start from the workers'
// current state, and a final status is read once more.
type uidMemory struct {
	ttl  time.Duration
	mu   sync.Mutex
	uids map[types.UID]time.Time
	// swept is when expired UIDs were last dropped: at most once a TTL, so
	// that an add costs O(1) however many UIDs are remembered, and the map
	// holds at most two TTLs of adds.
	swept time.Time
}

func newUIDMemory(ttl time.Duration) *uidMemory {
	return &uidMemory{ttl: ttl, uids: map[types.UID]time.Time{}}
}

// add remembers uid from now.
func (m *uidMemory) add(uid types.UID, now time.Time) {
	if uid == "" {
		return // Not an object an API server returned.
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uids[uid] = now
	// Forgetting here bounds the map without a goroutine of its own.
	if now.Sub(m.swept) <= m.ttl {
		return
	}
	m.swept = now
	for u, at := range m.uids {
		if now.Sub(at) > m.ttl {
			delete(m.uids, u)
		}
	}
}

// has reports whether uid was added within the TTL.
func (m *uidMemory) has(uid types.UID, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.uids[uid]
	return ok && now.Sub(at) <= m.ttl
}
