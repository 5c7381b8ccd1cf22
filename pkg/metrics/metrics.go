// Package metrics defines Courier's Prometheus metrics, registered with
// controller-runtime's registry and served on the metrics endpoint.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "courier"

var (
	// WorkerConnected is 1 while Courier holds a working connection to a
	// worker cluster, else 0.
	WorkerConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "worker_cluster_connected",
		Help:      "1 while Courier holds a working connection to the worker cluster, else 0.",
	}, []string{"cluster"})

	// WorkerReconnects counts connections re-established after a loss.
	WorkerReconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "worker_cluster_reconnects_total",
		Help:      "Connections to the worker cluster re-established after a loss.",
	}, []string{"cluster"})

	// RemoteRequestDuration is the latency of requests to worker API servers,
	// up to the response headers, by cluster and verb (see Verb).
	RemoteRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "remote_request_duration_seconds",
		Help:      "Latency of requests to worker API servers, up to the response headers.",
		Buckets:   []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"cluster", "verb"})

	// RemoteRequestErrors counts requests to worker API servers that failed
	// without a response, or got a 5xx or 429 answer.
	RemoteRequestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "remote_request_errors_total",
		Help:      "Requests to worker API servers that got no response (code \"none\"), or a 429 or 5xx answer.",
	}, []string{"cluster", "verb", "code"})

	// WorkerFenceAnswering is 1 while a fence answers on a worker Courier
	// reaches, and Courier's heartbeat reaches it, else 0.
	WorkerFenceAnswering = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "worker_fence_answering",
		Help:      "1 while a fence answers on the worker and Courier's heartbeat reaches it, else 0.",
	}, []string{"cluster"})

	// SelfFaultSuspected is 1 while Courier takes the workers out of its
	// reach for a fault on its own side, and moves none of their jobs.
	SelfFaultSuspected = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "self_fault_suspected",
		Help:      "1 while Courier takes the workers out of its reach for a fault on its own side, and moves none of their jobs.",
	})
)

// FenceAnswering sets whether a fence answers on worker cluster.
func FenceAnswering(cluster string, answering bool) {
	WorkerFenceAnswering.WithLabelValues(cluster).Set(boolValue(answering))
}

// SelfFault sets whether Courier suspects a fault of its own.
func SelfFault(suspected bool) { SelfFaultSuspected.Set(boolValue(suspected)) }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func init() {
	metrics.Registry.MustRegister(WorkerConnected, WorkerReconnects, RemoteRequestDuration, RemoteRequestErrors, WorkerFenceAnswering,
		SelfFaultSuspected, pending, expectations, buildInfo)
	metrics.Registry.MustRegister(dispatchCollectors...)
}

// ForgetWorker drops the series of a worker cluster that no longer exists.
func ForgetWorker(cluster string) {
	WorkerConnected.DeleteLabelValues(cluster)
	WorkerReconnects.DeleteLabelValues(cluster)
	WorkerFenceAnswering.DeleteLabelValues(cluster)
	CredentialExpiry.DeleteLabelValues(cluster)
	CredentialExpiring.DeleteLabelValues(cluster)
	CredentialPluginRuns.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	RemoteRequestDuration.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	RemoteRequestErrors.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	RemoteWatchEvents.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	RemoteWatchEventBytes.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	DispatchLatency.DeleteLabelValues(cluster)
	WorkloadsDispatched.DeleteLabelValues(cluster)
	WorkloadsAdmitted.DeleteLabelValues(cluster)
	for _, vec := range []*prometheus.CounterVec{WorkloadsRejected, WorkloadsRedispatched, WorkloadsEvicted, PlacementVerdicts} {
		vec.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	}
}

// InstrumentTransport returns a rest.Config WrapTransport that records the
// latency and errors of every request to the named worker.
func InstrumentTransport(cluster string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			verb := Verb(req)
			RemoteRequestDuration.WithLabelValues(cluster, verb).Observe(time.Since(start).Seconds())
			switch {
			case err != nil:
				RemoteRequestErrors.WithLabelValues(cluster, verb, "none").Inc()
			case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
				RemoteRequestErrors.WithLabelValues(cluster, verb, strconv.Itoa(resp.StatusCode)).Inc()
			}
			return resp, err
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
