package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentconfig "k8s.io/component-base/config/v1alpha1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// +kubebuilder:object:root=true

// Configuration is the file Courier reads at start (--config). Every field
// is optional; SetDefaults fills in what is left out.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// Origin is written as the value of the courier.dev/origin label on every
	// object Courier creates on a worker. Several managers can share one
	// worker as long as their origins differ. A label value.
	// +optional
	Origin string `json:"origin,omitempty"`

	// Namespace is where Courier runs: the kubeconfig Secrets of the
	// WorkerClusters and the leader-election lease live here. Left out,
	// it is the namespace in the environment variable POD_NAMESPACE (the
	// pod's own, which config/default sets from the downward API), else
	// courier-system.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// WorkerLostTimeout is how long a worker that holds an admitted job may be
	// unreachable before the job is dispatched elsewhere, as the
	// lostWorkerPolicy allows: under Timeout, counted from its first
	// disconnect; under Fenced, from Courier's last heartbeat to it, and it
	// must leave the fence the time to stop the job (see docs/reliability.md).
	// Only what Courier observes since it started counts.
	// +optional
	WorkerLostTimeout *metav1.Duration `json:"workerLostTimeout,omitempty"`

	// LostWorkerPolicy is what Courier does with the jobs of a worker it
	// cannot reach; a WorkerCluster may choose its own.
	// +optional
	LostWorkerPolicy courier.LostWorkerPolicy `json:"lostWorkerPolicy,omitempty"`

	// Fence sets the heartbeat Courier renews on each worker, which the
	// worker's fence watches.
	// +optional
	Fence *Fence `json:"fence,omitempty"`

	// SelfFault says when Courier takes workers going out of its reach
	// together for a fault on its own side, and moves nothing.
	// +optional
	SelfFault *SelfFault `json:"selfFault,omitempty"`

	// GCInterval is how often objects on workers whose manager Workload is
	// gone are garbage-collected.
	// +optional
	GCInterval *metav1.Duration `json:"gcInterval,omitempty"`

	// DispatchConcurrency is how many manager Workloads are dispatched at
	// once. Most of a dispatch is waiting on API servers, so it may well
	// exceed the number of CPUs.
	// +optional
	DispatchConcurrency *int32 `json:"dispatchConcurrency,omitempty"`

	// StatusMirrorDelay is how long a change of a running job copy's
	// conditions on a worker may wait before Courier mirrors the copy's
	// status to the manager's job, and the least time between two such
	// mirrors of one job, so that the changes a starting job makes one
	// after another cost one or two writes to the manager instead of one
	// each. A change that leaves the conditions as they were (counts of
	// pods) waits six times as long. A status that ends the job is
	// mirrored at once. 0 mirrors each change at once. Defaults to 5s; at
	// most 1m.
	// +optional
	StatusMirrorDelay *metav1.Duration `json:"statusMirrorDelay,omitempty"`

	// KueueFinishGrace is how long Courier leaves a Workload whose job's
	// end it mirrored to the manager's job for the manager's Kueue to
	// finish, as Kueue finishes any job's Workload from its status, before
	// Courier writes the Finished condition itself, and only while another
	// Workload waits for the quota it holds. Kueue finishing it saves the
	// manager a status write per job and its conflicts; Courier finishing
	// it releases the Workload's quota when the manager's Kueue lags
	// behind, as under a burst. 0 writes Finished with the mirror, whether
	// or not anything waits. Defaults to 10s; at most 10m.
	// +optional
	KueueFinishGrace *metav1.Duration `json:"kueueFinishGrace,omitempty"`

	// ManagerClient sets the rate limits of the client to the manager's API
	// server.
	// +optional
	ManagerClient *ClientConnection `json:"managerClient,omitempty"`

	// WorkerClient sets the rate limits of each worker's client. The
	// defaults are sized for batch work, far above client-go's 5 QPS.
	// +optional
	WorkerClient *ClientConnection `json:"workerClient,omitempty"`

	// WorkerCredentials lists the exec credential plugins Courier may run
	// to reach workers, bounds their runs, and says how early Courier
	// warns of a credential about to expire.
	// +optional
	WorkerCredentials *WorkerCredentials `json:"workerCredentials,omitempty"`

	// PlacementDecisions publishes where each job runs as a
	// PlacementDecision (multicluster.x-k8s.io/v1alpha1).
	// +optional
	PlacementDecisions *PlacementDecisions `json:"placementDecisions,omitempty"`

	// ExternalFrameworks lists the job kinds, besides the built-in TrainJob,
	// that Courier dispatches through its generic adapter.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	ExternalFrameworks []ExternalFramework `json:"externalFrameworks,omitempty"`

	// Health sets where the liveness and readiness probes are served.
	// +optional
	Health *HealthEndpoint `json:"health,omitempty"`

	// Metrics sets where Prometheus metrics are served.
	// +optional
	Metrics *MetricsEndpoint `json:"metrics,omitempty"`

	// LeaderElection configures leader election among Courier replicas.
	// +optional
	LeaderElection *componentconfig.LeaderElectionConfiguration `json:"leaderElection,omitempty"`

	// Webhook configures the admission webhooks Courier serves on the
	// manager: managedBy defaulting for jobs, and validation of TrainJobs and
	// DispatchPolicies.
	// +optional
	Webhook *Webhook `json:"webhook,omitempty"`
}

// CertManagement says who provides the webhook server's certificate.
// +kubebuilder:validation:Enum=Internal;External
type CertManagement string

const (
	// CertManagementInternal has Courier generate and rotate a self-signed
	// certificate, keep it in a Secret, and inject its CA into its webhook
	// configurations.
	CertManagementInternal CertManagement = "Internal"
	// CertManagementExternal reads the certificate from certDir, where
	// another tool (cert-manager) mounts it and also injects the CA.
	CertManagementExternal CertManagement = "External"
)

// Webhook configures Courier's admission webhook server.
type Webhook struct {
	// Enable turns the webhook server on. The chart and config/default turn
	// it on; the binary alone serves no webhooks, so that running it outside
	// a cluster needs no certificate.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// Port is the TCP port the webhook server listens on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// CertDir holds tls.crt and tls.key.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	CertDir string `json:"certDir,omitempty"`

	// CertManagement says who provides the certificate: Internal (Courier)
	// or External (mounted into certDir by another tool).
	// +optional
	CertManagement CertManagement `json:"certManagement,omitempty"`

	// ServiceName is the Service, in Courier's namespace, that the API
	// server reaches the webhooks through; the certificate is issued for it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ServiceName string `json:"serviceName,omitempty"`

	// SecretName is the Secret, in Courier's namespace, that holds the
	// certificate under Internal management.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`

	// MutatingConfigurationName and ValidatingConfigurationName are the
	// webhook configurations whose CA bundle Courier keeps under Internal
	// management.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	MutatingConfigurationName string `json:"mutatingConfigurationName,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ValidatingConfigurationName string `json:"validatingConfigurationName,omitempty"`
}

// ClientConnection holds the rate limits of one Kubernetes client.
type ClientConnection struct {
	// QPS is the sustained number of requests per second.
	// +optional
	QPS *float32 `json:"qps,omitempty"`

	// Burst is the number of requests allowed above QPS for a short time.
	// +optional
	Burst *int32 `json:"burst,omitempty"`
}

// ExternalFramework names one job kind handled by the generic adapter.
type ExternalFramework struct {
	// Name is the kind, version and group of the job, as Kind.version.group
	// (for example Job.v1.batch or JobSet.v1alpha2.jobset.x-k8s.io).
	// +required
	// +kubebuilder:validation:MaxLength=316
	Name string `json:"name"`

	// ManagedBy says where the manager-side job records that Courier, not
	// the job's own controller, runs it, and with which value. The field is
	// removed from the copy sent to a worker.
	// +optional
	ManagedBy *ManagedBy `json:"managedBy,omitempty"`

	// Status says which status fields are copied from the worker's job to
	// the manager's.
	// +optional
	Status *StatusSync `json:"status,omitempty"`

	// ForwardedSpecPaths are the dot-separated spec paths (such as
	// spec.parallelism) whose changes on the manager Courier carries to a
	// job already dispatched, and sets back when edited on the worker.
	// List only fields the kind's API lets a running job change. Changes to
	// other spec fields are reported on the manager's job, not forwarded.
	// Empty means none.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	ForwardedSpecPaths []string `json:"forwardedSpecPaths,omitempty"`
}

// ManagedBy locates a job kind's managedBy field.
type ManagedBy struct {
	// Path is the dot-separated field path, under spec.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// Value is what the field holds on manager-side jobs that Courier runs.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`
}

// StatusSync selects the status fields mirrored from a worker.
type StatusSync struct {
	// Fields are top-level fields of status. Empty means the whole status.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Fields []string `json:"fields,omitempty"`
}

// HealthEndpoint is where probes are served.
type HealthEndpoint struct {
	// BindAddress is the TCP address of /healthz and /readyz; "0" disables them.
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// MetricsEndpoint is where and how metrics are served.
type MetricsEndpoint struct {
	// BindAddress is the TCP address of /metrics; "0" disables it.
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`

	// SecureServing serves /metrics over HTTPS, and only to clients that
	// the manager's API server authenticates (a TokenReview of their
	// bearer token) and authorizes (a SubjectAccessReview of get on the
	// URL /metrics), such as a ServiceAccount bound to Courier's
	// metrics-reader ClusterRole. false serves plain HTTP to whoever
	// reaches the port: for a process on a loopback address only.
	// +optional
	SecureServing *bool `json:"secureServing,omitempty"`

	// CertDir holds tls.crt and tls.key for HTTPS, such as a cert-manager
	// Secret mounted there; Courier reloads them when they change. Empty
	// serves a self-signed certificate made at start. Only with
	// secureServing.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	CertDir string `json:"certDir,omitempty"`
}

// Fence is the heartbeat Courier renews on each worker, in a Lease the
// worker's fence (cmd/courier-fence) watches: the fence stops Courier's
// copies there once it has seen no renewal for timeout, by its own clock.
type Fence struct {
	// Namespace is the namespace on each worker of the heartbeat Lease and
	// of the fence.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Timeout is how long the fence waits for a renewal before it stops
	// Courier's copies on its worker.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// HeartbeatInterval is how often Courier renews the heartbeat.
	// +optional
	HeartbeatInterval *metav1.Duration `json:"heartbeatInterval,omitempty"`

	// StopGrace bounds how long a worker takes to stop a job once the fence
	// deactivated its Workload: Kueue's eviction, the job's suspension, and
	// its pods' termination grace period.
	// +optional
	StopGrace *metav1.Duration `json:"stopGrace,omitempty"`
}

// SelfFault says when workers going out of reach together is taken for a
// fault of Courier's own (its DNS, egress or network policy), in which
// case no job moves.
type SelfFault struct {
	// Share is the part of the workers, in percent, that must go out of
	// reach within window.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Share *int32 `json:"share,omitempty"`

	// Window is how close together their disconnects must be.
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
}

// WorkerCredentials says which exec credential plugins Courier runs to
// reach workers, and when it warns of credentials about to expire.
type WorkerCredentials struct {
	// ExpiryWarning is how long before a worker's credential expires
	// Courier warns (the WorkerCluster's CredentialValid condition, an
	// event and a metric) when nothing will renew it by then: a token or
	// client certificate the kubeconfig embeds, or a plugin's credential
	// that the plugin failed to renew. 0 warns only once it has expired.
	// +optional
	ExpiryWarning *metav1.Duration `json:"expiryWarning,omitempty"`

	// PluginTimeout bounds each run of a plugin: one still running then is
	// killed, and its failure reported.
	// +optional
	PluginTimeout *metav1.Duration `json:"pluginTimeout,omitempty"`

	// Plugins are the only exec credential plugins Courier runs. A
	// ClusterProfile's access provider is served by the plugin of the same
	// name; a kubeconfig's exec plugin runs when its command is a plugin's
	// name or its path. Nothing is looked up in PATH.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Plugins []CredentialPlugin `json:"plugins,omitempty"`
}

// CredentialPlugin is an exec credential plugin Courier may run: a binary
// that prints an ExecCredential (client.authentication.k8s.io) holding a
// token, as kubectl's exec plugins do.
type CredentialPlugin struct {
	// Name identifies the plugin: the name of the ClusterProfile access
	// providers it serves, and the command a kubeconfig may give for it.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Command is the plugin binary's absolute path.
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`

	// Args are the plugin's arguments for ClusterProfiles; a kubeconfig
	// gives its own.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Args []string `json:"args,omitempty"`

	// Env is added to the environment the plugin inherits from Courier.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Env []PluginEnvVar `json:"env,omitempty"`

	// APIVersion is the version of ExecCredential the plugin reads and
	// prints for ClusterProfiles (a kubeconfig gives its own):
	// client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// ProvideClusterInfo passes the worker's server address, CA and exec
	// extension to the plugin in KUBERNETES_EXEC_INFO, for ClusterProfiles
	// (a kubeconfig says for itself).
	// +optional
	ProvideClusterInfo *bool `json:"provideClusterInfo,omitempty"`

	// ProfileArgs says whether arguments a ClusterProfile gives the plugin
	// (its exec additional-args extension) are appended: Ignore or Append.
	// +optional
	// +kubebuilder:validation:Enum=Ignore;Append
	ProfileArgs string `json:"profileArgs,omitempty"`

	// ProfileEnv says what becomes of environment variables a
	// ClusterProfile gives the plugin (its exec additional-envs
	// extension): Ignore, AppendIfNotExists, or Replace.
	// +optional
	// +kubebuilder:validation:Enum=Ignore;AppendIfNotExists;Replace
	ProfileEnv string `json:"profileEnv,omitempty"`
}

// PluginEnvVar is one environment variable of a plugin.
type PluginEnvVar struct {
	// +required
	Name string `json:"name"`
	// +optional
	Value string `json:"value,omitempty"`
}

// PlacementDecisions turns the publication of placements on or off.
type PlacementDecisions struct {
	// Enable writes, for each placed manager Workload, a PlacementDecision
	// of the same name and namespace naming the worker's ClusterProfile
	// (or its WorkerCluster), and keeps it up to date. Off by default: it
	// costs a write per job (docs/performance.md), and the
	// PlacementDecision CRD must be installed on the manager.
	// +optional
	Enable *bool `json:"enable,omitempty"`
}
