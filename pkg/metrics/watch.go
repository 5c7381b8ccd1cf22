package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The watch events Courier's informers read, as its informers count them
// (pkg/watchdecode): neither the API server's audit log nor client-go's
// metrics count what a client receives, and these are most of what
// Courier reads. The kind label is the watched kind and its group
// ("Workload.kueue.x-k8s.io", "Secret").
var (
	// ManagerWatchEvents counts the watch events read from the manager.
	ManagerWatchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "manager_watch_events_total",
		Help:      "Watch events Courier's informers read from the manager's API server, by kind watched.",
	}, []string{"kind"})

	// ManagerWatchEventBytes counts their bytes, as the API server sent them.
	ManagerWatchEventBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "manager_watch_event_bytes_total",
		Help:      "Bytes of the watch events Courier's informers read from the manager's API server, by kind watched.",
	}, []string{"kind"})

	// RemoteWatchEvents counts the watch events read from each worker.
	RemoteWatchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "remote_watch_events_total",
		Help:      "Watch events Courier's informers read from the worker's API server, by kind watched.",
	}, []string{"cluster", "kind"})

	// RemoteWatchEventBytes counts their bytes.
	RemoteWatchEventBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "remote_watch_event_bytes_total",
		Help:      "Bytes of the watch events Courier's informers read from the worker's API server, by kind watched.",
	}, []string{"cluster", "kind"})
)

func init() {
	metrics.Registry.MustRegister(ManagerWatchEvents, ManagerWatchEventBytes, RemoteWatchEvents, RemoteWatchEventBytes)
}

// ManagerWatchCounter counts the events of a watch of the manager: a
// watchdecode.Counter. It looks the series up once per informer, so that
// counting an event is two atomic adds.
func ManagerWatchCounter(gvk schema.GroupVersionKind) func(bytes int) {
	kind := gvk.GroupKind().String()
	return watchCounter(ManagerWatchEvents.WithLabelValues(kind), ManagerWatchEventBytes.WithLabelValues(kind))
}

// RemoteWatchCounter returns the watchdecode.Counter of a worker's
// watches; ForgetWorker drops their series with the worker's others.
func RemoteWatchCounter(cluster string) func(gvk schema.GroupVersionKind) func(bytes int) {
	return func(gvk schema.GroupVersionKind) func(bytes int) {
		kind := gvk.GroupKind().String()
		return watchCounter(RemoteWatchEvents.WithLabelValues(cluster, kind), RemoteWatchEventBytes.WithLabelValues(cluster, kind))
	}
}

func watchCounter(events, bytes prometheus.Counter) func(int) {
	return func(n int) {
		events.Inc()
		bytes.Add(float64(n))
	}
}
