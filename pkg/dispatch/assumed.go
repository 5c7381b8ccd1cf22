package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/pkg/placement"
)

// assumedTTL is how long a copy Courier created counts as pending demand
// of its own: longer than the capacity snapshots take to include it.
const assumedTTL = 2 * time.Second

// assumedCopies remembers the copies Courier created in the last
// assumedTTL, per worker, with their demand, as schedulers "assume" a pod
// they placed. Workloads planned in the same second would otherwise all see
// the same snapshot, and a burst would all go to the roomiest worker. A
// copy the snapshot already counts as waiting is not assumed on top: counted
// twice, one copy filled a small worker, and BestFit sent the rest of a
// burst to the big one, where one waited for a round while the small one
// had room.
type assumedCopies struct {
	mu     sync.Mutex
	copies map[string]map[types.UID]assumedCopy
}

type assumedCopy struct {
	// queue is namespace/LocalQueue: only copies to the same LocalQueue
	// draw from the same ClusterQueue for sure.
	queue   string
	podSets []placement.PodSet
	at      time.Time
}

func newAssumedCopies() *assumedCopies {
	return &assumedCopies{copies: map[string]map[types.UID]assumedCopy{}}
}

// add assumes the copy of Workload uid created on cluster at now.
func (a *assumedCopies) add(cluster string, uid types.UID, queue string, podSets []placement.PodSet, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.copies[cluster] == nil {
		a.copies[cluster] = map[types.UID]assumedCopy{}
	}
	a.copies[cluster][uid] = assumedCopy{queue: queue, podSets: podSets, at: now}
	for c, byUID := range a.copies {
		for u, ac := range byUID {
			if now.Sub(ac.at) > assumedTTL {
				delete(byUID, u)
			}
		}
		if len(byUID) == 0 {
			delete(a.copies, c)
		}
	}
}

// podSets are the pod sets of the copies assumed on cluster for queue, but
// those of Workload except, whose own copy is not demand on top of itself,
// and those the capacity snapshot already counts (counted, if not nil).
func (a *assumedCopies) podSets(cluster, queue string, except types.UID, now time.Time, counted func(types.UID) bool) []placement.PodSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []placement.PodSet
	for uid, ac := range a.copies[cluster] {
		if uid != except && ac.queue == queue && now.Sub(ac.at) <= assumedTTL && (counted == nil || !counted(uid)) {
			out = append(out, ac.podSets...)
		}
	}
	return out
}
