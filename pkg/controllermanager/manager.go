package controllermanager

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
	"github.com/courierdev/courier/pkg/watchdecode"
)

// Options turns a defaulted Configuration into manager options.
func Options(cfg *configv1alpha1.Configuration) ctrl.Options {
	le := cfg.LeaderElection
	return ctrl.Options{
		Scheme:                 NewScheme(),
		HealthProbeBindAddress: cfg.Health.BindAddress,
		Metrics:                metricsOptions(cfg.Metrics),
		// Started only when the Configuration enables webhooks (see pkg/webhook).
		WebhookServer:              webhook.NewServer(webhook.Options{Port: int(*cfg.Webhook.Port), CertDir: cfg.Webhook.CertDir}),
		LeaderElection:             *le.LeaderElect,
		LeaderElectionID:           le.ResourceName,
		LeaderElectionNamespace:    le.ResourceNamespace,
		LeaderElectionResourceLock: le.ResourceLock,
		LeaseDuration:              &le.LeaseDuration.Duration,
		RenewDeadline:              &le.RenewDeadline.Duration,
		RetryPeriod:                &le.RetryPeriod.Duration,
		// Courier hands work between clusters; a new leader should not wait
		// for the old lease to run out when the old one stops cleanly.
		LeaderElectionReleaseOnCancel: true,
		// Jobs are read generically, as unstructured objects, from the cache.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		// cache.New, with watch events decoded in fewer passes over their
		// bytes, and objects without their managed fields, which Courier
		// never reads and which are often half an object: watches do not
		// even decode them. Every event read is counted in the metrics.
		NewCache: watchdecode.CountingCacheWithoutManagedFields(metrics.ManagerWatchCounter),
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				// Only kubeconfig Secrets in Courier's namespace are read.
				&corev1.Secret{}: {Namespaces: map[string]cache.Config{cfg.Namespace: {}}},
			},
		},
	}
}

// metricsOptions serves metrics over HTTPS behind the manager's API
// server's authentication and authorization unless the Configuration
// asks for plain HTTP: the metrics name every worker and job namespace.
func metricsOptions(m *configv1alpha1.MetricsEndpoint) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: m.BindAddress}
	if *m.SecureServing {
		opts.SecureServing = true
		opts.CertDir = m.CertDir
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

// Flags are the settings that come from the command line, not from the
// Configuration file.
type Flags struct {
	// PprofBindAddress serves net/http/pprof when set; empty turns it off.
	PprofBindAddress string
}

// New builds the manager for the manager cluster at restConfig, with
// Courier's probes registered. Setup adds the controllers.
func New(restConfig *rest.Config, cfg *configv1alpha1.Configuration, flags Flags) (ctrl.Manager, error) {
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS = *cfg.ManagerClient.QPS
	restConfig.Burst = int(*cfg.ManagerClient.Burst)
	// The objects writes return come as the cache holds them: without
	// managed fields, which are about half their bytes.
	restConfig.Wrap(watchdecode.ResponsesWithoutManagedFields)
	opts := Options(cfg)
	opts.PprofBindAddress = flags.PprofBindAddress
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding readiness check: %w", err)
	}
	return mgr, nil
}
