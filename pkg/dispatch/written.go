package dispatch

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// writtenTTL bounds how long Courier remembers its own writes when the
// cache never shows that it caught up (the Workload deleted meanwhile,
// say): far longer than the manager's informer takes to deliver them, even
// when its watch broke and it lists again after a backoff. The soak saw a
// cache 50 s behind after the manager's API server restarted (docs/soak.md,
// finding 23); a pass that acted on it once the memory of Courier's write
// had expired took a placement Courier had given up for a live one.
const writtenTTL = 5 * time.Minute

// afterConflict is when a pass whose write on a manager Workload was
// refused looks again. The newer version's event may have come before the
// refusal was noted, and gone by as one no plan reads: the pass does not
// wait for it. If the cache still shows the old version then, the pass
// waits for the event, which the note now lets through.
const afterConflict = 20 * time.Millisecond

// ownWrites remembers, per manager Workload, the resourceVersions the API
// server holds newer ones of: those Courier's last writes replaced, and
// those a write of Courier's was refused on for a conflict. While the cache
// still shows such a version, a pass would decide on old state, and its
// write would only conflict; the event of the newer version is on its way
// and brings the next pass, even when it changes nothing a plan reads
// (workloadChanged). Kept in memory: after a restart the cache starts
// fresh.
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

// note records that the API server holds a version of the Workload uid
// newer than replaced: Courier wrote over it, or was refused writing on it.
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

// stale reports whether version is one noted lately: the API server holds
// a newer one.
func (w *ownWrites) stale(uid types.UID, version string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.staleLocked(uid, version, now)
}

// behind is stale for a pass: it also forgets uid's writes once the cache
// shows a version none of them replaced, which holds them all.
func (w *ownWrites) behind(uid types.UID, version string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.staleLocked(uid, version, now) {
		return true
	}
	delete(w.byUID, uid)
	return false
}

func (w *ownWrites) staleLocked(uid types.UID, version string, now time.Time) bool {
	ow, ok := w.byUID[uid]
	return ok && now.Sub(ow.at) <= writtenTTL && slices.Contains(ow.replaced, version)
}
