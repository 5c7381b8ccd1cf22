package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// PendingCounter counts, by admission check name, the manager Workloads on
// which Courier's check is Pending. It is called at each scrape, and must
// read caches only.
type PendingCounter func() (map[string]int, error)

// scrapeGauge is a gauge of one label computed at scrape time from the
// dispatcher's own state, so that keeping it costs no work per reconcile.
// Only the leader's dispatcher sets a counter; other replicas export no
// series, and a sum across replicas stays true.
type scrapeGauge struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// count is nil while no dispatcher runs.
	count func() (map[string]int, error)
}

var pending = &scrapeGauge{desc: prometheus.NewDesc(
	prometheus.BuildFQName(namespace, "", "pending_workloads"),
	"Manager Workloads on which Courier's admission check is Pending, by check name; exported by the leader only.",
	[]string{"check"}, nil,
)}

var expectations = &scrapeGauge{desc: prometheus.NewDesc(
	prometheus.BuildFQName(namespace, "", "dispatch_expectations"),
	"Entries the dispatcher keeps of what it did that its caches may not show yet, by kind; exported by the leader only.",
	[]string{"kind"}, nil,
)}

// CountPendingWith makes the pending-workloads gauge use count from the
// next scrape on; nil removes its series.
func CountPendingWith(count PendingCounter) { pending.set(count) }

// CountExpectationsWith makes the expectations gauge use sizes from the
// next scrape on; nil removes its series.
func CountExpectationsWith(sizes func() map[string]int) {
	if sizes == nil {
		expectations.set(nil)
		return
	}
	expectations.set(func() (map[string]int, error) { return sizes(), nil })
}

func (g *scrapeGauge) set(count func() (map[string]int, error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.count = count
}

func (g *scrapeGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *scrapeGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	count := g.count
	g.mu.Unlock()
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
	for label, n := range counts {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n), label)
	}
}
