package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// The defaults of the Configuration, declared here once.
const (
	DefaultOrigin            = "courier"
	DefaultNamespace         = "courier-system"
	DefaultWorkerLostTimeout = 15 * time.Minute
	// Long GPU jobs must neither run twice nor be killed for Courier's own
	// bad quarter of an hour: a job moves only once a fence stopped it.
	DefaultLostWorkerPolicy          = courier.LostWorkerFenced
	DefaultFenceNamespace            = "courier-system"
	DefaultFenceTimeout              = 2 * time.Minute
	DefaultHeartbeatInterval         = 10 * time.Second
	DefaultStopGrace                 = 2 * time.Minute
	DefaultSelfFaultShare      int32 = 50
	DefaultSelfFaultWindow           = 2 * time.Minute
	DefaultGCInterval                = time.Minute
	DefaultDispatchConcurrency int32 = 16
	DefaultStatusMirrorDelay         = 5 * time.Second
	DefaultKueueFinishGrace          = 10 * time.Second
	// Batch dispatch makes several requests per job to each worker; client-go's
	// 5 QPS held MultiKueue to about one workload per second (kueue#8564).
	DefaultWorkerQPS             float32 = 500
	DefaultWorkerBurst           int32   = 1000
	DefaultManagerQPS            float32 = 100
	DefaultManagerBurst          int32   = 200
	DefaultHealthBindAddress             = ":8081"
	DefaultMetricsBindAddress            = ":8443"
	DefaultLeaderElectionID              = "courier.dev"
	DefaultManagedByPath                 = "spec.managedBy"
	DefaultManagedByValue                = "courier.dev/dispatcher"
	DefaultWebhookPort           int32   = 9443
	DefaultWebhookCertDir                = "/tmp/k8s-webhook-server/serving-certs"
	DefaultWebhookServiceName            = "courier-webhook-service"
	DefaultWebhookSecretName             = "courier-webhook-server-cert"
	DefaultMutatingWebhookName           = "courier-mutating-webhook-configuration"
	DefaultValidatingWebhookName         = "courier-validating-webhook-configuration"
	// A week gives a person time to rotate a token by hand; a plugin that
	// renews its credential is not warned of.
	DefaultCredentialExpiryWarning = 7 * 24 * time.Hour
	// Cloud plugins answer in a second or two; one that hangs must not
	// hold its worker's connection for long.
	DefaultPluginTimeout    = 20 * time.Second
	DefaultPluginAPIVersion = "client.authentication.k8s.io/v1"
	DefaultProfileArgs      = "Ignore"
	DefaultProfileEnv       = "Ignore"
)

// NamespaceEnv names the environment variable whose value, the pod's
// namespace, a Configuration loaded from a file takes when it leaves
// namespace out: a kustomize namespace change then needs no edit of the
// file.
const NamespaceEnv = "POD_NAMESPACE"

// DefaultMetricsSecureServing serves metrics over HTTPS, to authenticated
// and authorized clients only, unless the Configuration asks for plain HTTP.
const DefaultMetricsSecureServing = true

// SetDefaults fills every field left empty.
func SetDefaults(c *Configuration) {
	if c.Origin == "" {
		c.Origin = DefaultOrigin
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.WorkerLostTimeout == nil {
		c.WorkerLostTimeout = &metav1.Duration{Duration: DefaultWorkerLostTimeout}
	}
	if c.LostWorkerPolicy == "" {
		c.LostWorkerPolicy = DefaultLostWorkerPolicy
	}
	c.Fence = defaultFence(c.Fence)
	if c.SelfFault == nil {
		c.SelfFault = &SelfFault{}
	}
	if c.SelfFault.Share == nil {
		c.SelfFault.Share = ptr.To(DefaultSelfFaultShare)
	}
	if c.SelfFault.Window == nil {
		c.SelfFault.Window = &metav1.Duration{Duration: DefaultSelfFaultWindow}
	}
	if c.GCInterval == nil {
		c.GCInterval = &metav1.Duration{Duration: DefaultGCInterval}
	}
	if c.DispatchConcurrency == nil {
		c.DispatchConcurrency = ptr.To(DefaultDispatchConcurrency)
	}
	if c.StatusMirrorDelay == nil {
		c.StatusMirrorDelay = &metav1.Duration{Duration: DefaultStatusMirrorDelay}
	}
	if c.KueueFinishGrace == nil {
		c.KueueFinishGrace = &metav1.Duration{Duration: DefaultKueueFinishGrace}
	}
	c.ManagerClient = defaultClient(c.ManagerClient, DefaultManagerQPS, DefaultManagerBurst)
	c.WorkerClient = defaultClient(c.WorkerClient, DefaultWorkerQPS, DefaultWorkerBurst)
	for i := range c.ExternalFrameworks {
		defaultFramework(&c.ExternalFrameworks[i])
	}
	if c.Health == nil {
		c.Health = &HealthEndpoint{}
	}
	if c.Health.BindAddress == "" {
		c.Health.BindAddress = DefaultHealthBindAddress
	}
	if c.Metrics == nil {
		c.Metrics = &MetricsEndpoint{}
	}
	if c.Metrics.BindAddress == "" {
		c.Metrics.BindAddress = DefaultMetricsBindAddress
	}
	if c.Metrics.SecureServing == nil {
		c.Metrics.SecureServing = ptr.To(DefaultMetricsSecureServing)
	}
	if c.LeaderElection == nil {
		c.LeaderElection = &componentconfig.LeaderElectionConfiguration{}
	}
	if c.LeaderElection.ResourceLock == "" {
		// component-base still recommends endpoints; controller-runtime uses leases.
		c.LeaderElection.ResourceLock = "leases"
	}
	componentconfig.RecommendedDefaultLeaderElectionConfiguration(c.LeaderElection)
	c.Webhook = defaultWebhook(c.Webhook)
	c.WorkerCredentials = defaultWorkerCredentials(c.WorkerCredentials)
	if c.PlacementDecisions == nil {
		c.PlacementDecisions = &PlacementDecisions{}
	}
	if c.PlacementDecisions.Enable == nil {
		c.PlacementDecisions.Enable = ptr.To(false)
	}
	if c.LeaderElection.ResourceName == "" {
		c.LeaderElection.ResourceName = DefaultLeaderElectionID
	}
	if c.LeaderElection.ResourceNamespace == "" {
		c.LeaderElection.ResourceNamespace = c.Namespace
	}
}

func defaultClient(c *ClientConnection, qps float32, burst int32) *ClientConnection {
	if c == nil {
		c = &ClientConnection{}
	}
	if c.QPS == nil {
		c.QPS = ptr.To(qps)
	}
	if c.Burst == nil {
		c.Burst = ptr.To(burst)
	}
	return c
}

func defaultFramework(f *ExternalFramework) {
	if f.ManagedBy == nil {
		f.ManagedBy = &ManagedBy{}
	}
	if f.ManagedBy.Path == "" {
		f.ManagedBy.Path = DefaultManagedByPath
	}
	if f.ManagedBy.Value == "" {
		f.ManagedBy.Value = DefaultManagedByValue
	}
	if f.Status == nil {
		f.Status = &StatusSync{}
	}
}

func defaultWebhook(w *Webhook) *Webhook {
	if w == nil {
		w = &Webhook{}
	}
	if w.Enable == nil {
		w.Enable = ptr.To(false)
	}
	if w.Port == nil {
		w.Port = ptr.To(DefaultWebhookPort)
	}
	if w.CertDir == "" {
		w.CertDir = DefaultWebhookCertDir
	}
	if w.CertManagement == "" {
		w.CertManagement = CertManagementInternal
	}
	if w.ServiceName == "" {
		w.ServiceName = DefaultWebhookServiceName
	}
	if w.SecretName == "" {
		w.SecretName = DefaultWebhookSecretName
	}
	if w.MutatingConfigurationName == "" {
		w.MutatingConfigurationName = DefaultMutatingWebhookName
	}
	if w.ValidatingConfigurationName == "" {
		w.ValidatingConfigurationName = DefaultValidatingWebhookName
	}
	return w
}

func defaultWorkerCredentials(w *WorkerCredentials) *WorkerCredentials {
	if w == nil {
		w = &WorkerCredentials{}
	}
	if w.ExpiryWarning == nil {
		w.ExpiryWarning = &metav1.Duration{Duration: DefaultCredentialExpiryWarning}
	}
	if w.PluginTimeout == nil {
		w.PluginTimeout = &metav1.Duration{Duration: DefaultPluginTimeout}
	}
	for i := range w.Plugins {
		p := &w.Plugins[i]
		if p.APIVersion == "" {
			p.APIVersion = DefaultPluginAPIVersion
		}
		if p.ProvideClusterInfo == nil {
			// Plugins that serve ClusterProfiles are told which cluster
			// to hand a credential for.
			p.ProvideClusterInfo = ptr.To(true)
		}
		if p.ProfileArgs == "" {
			p.ProfileArgs = DefaultProfileArgs
		}
		if p.ProfileEnv == "" {
			p.ProfileEnv = DefaultProfileEnv
		}
	}
	return w
}

func defaultFence(f *Fence) *Fence {
	if f == nil {
		f = &Fence{}
	}
	if f.Namespace == "" {
		f.Namespace = DefaultFenceNamespace
	}
	if f.Timeout == nil {
		f.Timeout = &metav1.Duration{Duration: DefaultFenceTimeout}
	}
	if f.HeartbeatInterval == nil {
		f.HeartbeatInterval = &metav1.Duration{Duration: DefaultHeartbeatInterval}
	}
	if f.StopGrace == nil {
		f.StopGrace = &metav1.Duration{Duration: DefaultStopGrace}
	}
	return f
}

// HeartbeatRequestTimeout bounds how long after Courier sent a heartbeat
// the worker's API server may still store it: the API server's own request
// timeout (kube-apiserver's --request-timeout, one minute by default).
const HeartbeatRequestTimeout = time.Minute

// ClockRateError bounds how much faster one clock may run than another
// over the fence's timeout: Courier's and the fence's each measure only
// their own intervals, never each other's times.
const ClockRateError = 0.01

// FenceReaction bounds how long the fence takes to see a renewal and, once
// its timeout is over, to deactivate a copy: it reads the heartbeat by
// polling every second (a watch may deliver late), and one write.
const FenceReaction = 10 * time.Second

// MinFencedLostTimeout is the shortest workerLostTimeout under which a
// lost worker's job moves only after its fence must have stopped it. A
// heartbeat Courier sent at t may be stored as late as
// t+HeartbeatRequestTimeout. The fence counts its timeout from the poll
// that first showed that renewal, which it sends at most a second after,
// by its own clock, which may run slow by ClockRateError against
// Courier's; it then deactivates the copy within FenceReaction, and the
// worker stops the job within stopGrace. Courier, counting from t by its
// own clock, moves the job only after this sum.
func MinFencedLostTimeout(f *Fence) time.Duration {
	f = defaultFence(f.DeepCopy())
	waited := float64(HeartbeatRequestTimeout+f.Timeout.Duration) * (1 + ClockRateError)
	return time.Duration(waited) + FenceReaction + f.StopGrace.Duration
}
