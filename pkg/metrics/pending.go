package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// PendingCounter counts, by admission check name, the manager Workloads on
// which Courier's check is Pending. It is called at each scrape, and must
// read caches only.
type PendingCounter func() (map[string]int, error)

// pendingWorkloads is a gauge computed at scrape time from the
// dispatcher's cache and index, so that keeping it costs no work per
// reconcile. Only the leader's dispatcher sets a counter; other replicas
// export no series, and a sum across replicas stays true.
type pendingWorkloads struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// count is nil while no dispatcher runs.
	count PendingCounter
}

var pending = &pendingWorkloads{desc: prometheus.NewDesc(
	prometheus.BuildFQName(namespace, "", "pending_workloads"),
	"Manager Workloads on which Courier's admission check is Pending, by check name; exported by the leader only.",
	[]string{"check"}, nil,
)}

// CountPendingWith makes the pending-workloads gauge use count from the
// next scrape on; nil removes its series.
func CountPendingWith(count PendingCounter) {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	pending.count = count
}

func (p *pendingWorkloads) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *pendingWorkloads) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	count := p.count
	p.mu.Unlock()
	if count == nil {
		return
	}
	counts, err := count()
	if err != nil {
		// No series rather than a zero that would read as an empty queue,
		// nor a failed scrape that would hide every other metric. A cache
		// read fails only before the cache has started.
		return
	}
	for check, n := range counts {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), check)
	}
}
