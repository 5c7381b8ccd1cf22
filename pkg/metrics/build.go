package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/courierdev/courier/pkg/version"
)

// buildInfo is always 1; its labels say which build runs, so that a query
// can join any series with the release that exported it, and a rollout
// shows as the version changing.
var buildInfo = newBuildInfo(version.Get())

func newBuildInfo(v version.Info) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   namespace,
		Name:        "build_info",
		Help:        "1, labelled with the version, git revision and Go version of the running Courier.",
		ConstLabels: prometheus.Labels{"version": v.Version, "revision": v.Revision, "goversion": v.GoVersion},
	})
	g.Set(1)
	return g
}
