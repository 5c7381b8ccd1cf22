package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/pkg/placement"
)

// assumedTTL bounds how long a copy Courier created counts as demand of
// its own while the capacity snapshots do not show it: they show it
// within a second or two, unless the worker's informers lag far behind.
const assumedTTL = 10 * time.Second

// assumedCopies remembers the copies Courier created, per worker, with
// their demand, as schedulers "assume" a pod they placed, until the
// capacity snapshot shows them. Workloads planned in the same second would
// otherwise all see the same snapshot, and a burst would all go to the
// roomiest worker. A copy the snapshot shows is not assumed on top: the
// snapshot counts it, as waiting or holding quota. Counted twice, one copy
// filled a small worker, and BestFit sent the rest of a burst to the big
// one, where one waited for a round while the small one had room; counted
// nowhere (assumed for a fixed two seconds, while Kueue wrote the
// ClusterQueue's usage later), one went to a full worker.
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

// forget drops the copy of Workload uid on cluster: Courier deleted it, or
// the job copy it goes with.
func (a *assumedCopies) forget(cluster string, uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.copies[cluster], uid)
}

// podSets are the pod sets of the copies assumed on cluster for queue, but
// those of Workload except, whose own copy is not demand on top of itself.
// A copy the capacity snapshot shows (shown, if not nil) is forgotten: the
// snapshot counts it from then on, and one deleted soon after must not
// come back as assumed demand.
func (a *assumedCopies) podSets(cluster, queue string, except types.UID, now time.Time, shown func(types.UID) bool) []placement.PodSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []placement.PodSet
	for uid, ac := range a.copies[cluster] {
		if shown != nil && shown(uid) {
			delete(a.copies[cluster], uid)
			continue
		}
		if uid != except && ac.queue == queue && now.Sub(ac.at) <= assumedTTL {
			out = append(out, ac.podSets...)
		}
	}
	return out
}
