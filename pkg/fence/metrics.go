package fence

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// fencedOrigins is the number of origins whose copies the fence is
	// stopping.
	fencedOrigins = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "courier",
		Subsystem: "fence",
		Name:      "fenced_origins",
		Help:      "Origins whose heartbeat is stale and whose Workloads the fence deactivates.",
	})

	// fencedWorkloads counts the Workloads the fence deactivated.
	fencedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "courier",
		Subsystem: "fence",
		Name:      "fenced_workloads_total",
		Help:      "Workloads the fence deactivated because their origin's heartbeat had stopped.",
	}, []string{"origin"})
)

func init() {
	metrics.Registry.MustRegister(fencedOrigins, fencedWorkloads)
}
