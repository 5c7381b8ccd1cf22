package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// CredentialExpiry is when the credential Courier reaches a worker with
	// expires, as a Unix time; no series for a credential that does not
	// expire.
	CredentialExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "worker_credential_expiry_timestamp_seconds",
		Help:      "When the credential Courier reaches the worker cluster with expires, in seconds since the epoch; no series when it does not expire.",
	}, []string{"cluster"})

	// CredentialExpiring is 1 while a worker's CredentialValid condition is
	// False: its credential expires within workerCredentials.expiryWarning
	// with nothing to renew it, or has expired.
	CredentialExpiring = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "worker_credential_expiring",
		Help:      "1 while the worker cluster's credential is about to expire with nothing to renew it, or has expired; else 0.",
	}, []string{"cluster"})

	// CredentialPluginRuns counts runs of exec credential plugins, by
	// worker, plugin and result: success, failed (a non-zero exit),
	// timeout (stopped after workerCredentials.pluginTimeout) or invalid
	// (its output was not an ExecCredential with a token).
	CredentialPluginRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "credential_plugin_runs_total",
		Help:      "Runs of exec credential plugins, by worker cluster, plugin and result (success, failed, timeout, invalid).",
	}, []string{"cluster", "plugin", "result"})
)

// Credential sets what is known of a worker's credential: when it expires
// (zero for never) and whether Courier warns of it.
func Credential(cluster string, expiresAt time.Time, expiring bool) {
	if expiresAt.IsZero() {
		CredentialExpiry.DeleteLabelValues(cluster)
	} else {
		CredentialExpiry.WithLabelValues(cluster).Set(float64(expiresAt.Unix()))
	}
	CredentialExpiring.WithLabelValues(cluster).Set(boolValue(expiring))
}

func init() {
	metrics.Registry.MustRegister(CredentialExpiry, CredentialExpiring, CredentialPluginRuns)
}
