package v1alpha1

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkerClusterSpec says how to reach a worker cluster: through a
// kubeconfig Secret or through a ClusterProfile, exactly one of them.
// +kubebuilder:validation:ExactlyOneOf=kubeconfig;clusterProfileRef
type WorkerClusterSpec struct {
	// Kubeconfig locates the kubeconfig Courier uses to reach the worker.
	// +optional
	Kubeconfig *KubeconfigSource `json:"kubeconfig,omitempty"`

	// ClusterProfileRef names the ClusterProfile
	// (multicluster.x-k8s.io/v1alpha1) a cluster inventory keeps for the
	// worker. Courier reaches the worker through the first of the
	// profile's access providers that a plugin of the Configuration's
	// workerCredentials serves, and holds the profile while the
	// WorkerCluster names it. When the profile is deleted, Courier deletes
	// the WorkerCluster, which drains first.
	// +optional
	ClusterProfileRef *ClusterProfileReference `json:"clusterProfileRef,omitempty"`

	// RuntimePatch is added to every TrainJob Courier sends to this
	// worker, as Courier's own RuntimePatches entry (manager
	// courier.dev/dispatcher): for the nodeSelector, tolerations, volumes
	// or imagePullSecrets this worker needs. Trainer's rules apply: no env
	// on the node or initializer containers. The manager's TrainJob is not
	// changed.
	// +optional
	RuntimePatch *trainer.TrainingRuntimeSpecPatch `json:"runtimePatch,omitempty"`

	// LostWorkerPolicy is what Courier does with this worker's jobs when it
	// cannot reach it, in place of the Configuration's: Fenced, Timeout or
	// Never (see docs/reliability.md).
	// +optional
	// +kubebuilder:validation:Enum=Fenced;Timeout;Never
	LostWorkerPolicy LostWorkerPolicy `json:"lostWorkerPolicy,omitempty"`
}

// LostWorkerPolicy is what Courier does with the jobs placed on a worker it
// cannot reach.
type LostWorkerPolicy string

const (
	// LostWorkerFenced moves a lost worker's jobs only once the fence on
	// that worker must have stopped them; where no fence ever answered,
	// nothing moves.
	LostWorkerFenced LostWorkerPolicy = "Fenced"
	// LostWorkerTimeout moves a lost worker's jobs workerLostTimeout after
	// its first disconnect, with nothing on the worker to stop them: a
	// worker cut off from Courier that goes on running them runs them
	// twice.
	LostWorkerTimeout LostWorkerPolicy = "Timeout"
	// LostWorkerNever never moves a lost worker's jobs: it reports them,
	// and they go on when the worker is back.
	LostWorkerNever LostWorkerPolicy = "Never"
)

// KubeconfigSource is where a kubeconfig is kept.
type KubeconfigSource struct {
	// SecretRef names a Secret in Courier's namespace and the key holding
	// the kubeconfig. The kubeconfig must embed its credentials, or get
	// them from an exec plugin the Configuration's workerCredentials
	// allows: file references, other exec plugins, auth-provider plugins,
	// basic auth and insecure-skip-tls-verify are refused.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`
}

// ClusterProfileReference names a ClusterProfile.
type ClusterProfileReference struct {
	// Namespace of the ClusterProfile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// Name of the ClusterProfile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretKeyReference names one key of a Secret in Courier's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key within the Secret's data.
	// +optional
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// WorkerClusterStatus is what Courier observed of a worker.
type WorkerClusterStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Active says whether the worker is reachable and usable;
	// KindsAvailable says whether every job kind Courier dispatches is
	// served there.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ConnectedSince is when the current connection was established.
	// +optional
	ConnectedSince *metav1.Time `json:"connectedSince,omitempty"`

	// DisconnectedSince is when the worker stopped being usable: first
	// found unreachable, or, having been Active, first refusing Courier's
	// credentials or losing its kubeconfig (a configuration error). Retries
	// do not move it, and workerLostTimeout counts from it: the jobs placed
	// on the worker are dispatched elsewhere once it is older than that. It
	// is cleared on connecting. A worker that was never Active does not get
	// it from a configuration error: it holds no jobs.
	// +optional
	DisconnectedSince *metav1.Time `json:"disconnectedSince,omitempty"`

	// RevokedSince is when Courier gave up counting on the worker: lost for
	// long enough under the Fenced policy, and not for a fault of Courier's
	// own. The worker's fence, which reads it, stops Courier's copies there
	// once Courier's heartbeat has stopped too; the jobs move a fence's
	// margin later. It is cleared when Courier reaches the worker again.
	// +optional
	RevokedSince *metav1.Time `json:"revokedSince,omitempty"`

	// Credential is what Courier knows of the credential it reaches the
	// worker with: the plugin that hands it out, if any, and when it
	// expires. Unset for a credential that does not expire and comes from
	// no plugin.
	// +optional
	Credential *CredentialStatus `json:"credential,omitempty"`

	// PreemptionGates says whether the worker's Kueue holds a preemption
	// back behind a gate until Courier opens it (Enabled), so that Courier
	// lets one worker at a time preempt for a job, or not (Disabled);
	// empty until Courier has found out, on connecting.
	// +optional
	// +kubebuilder:validation:Enum=Enabled;Disabled
	PreemptionGates PreemptionGatesState `json:"preemptionGates,omitempty"`

	// KubernetesVersion is the worker API server's version.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// UnavailableKinds lists the job kinds (Kind.version.group) the worker
	// does not serve; jobs of those kinds are not sent there.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	UnavailableKinds []string `json:"unavailableKinds,omitempty"`

	// Capacity sums the worker's Kueue quota, per flavor and resource, over
	// its ClusterQueues, as last observed. Placement reads the figures per
	// ClusterQueue; this is their summary.
	// +optional
	// +listType=map
	// +listMapKey=flavor
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=64
	Capacity []ResourceCapacity `json:"capacity,omitempty"`

	// CapacitySummary is the capacity of the resources jobs ask for most,
	// in one line, for kubectl get: used/nominal per resource.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CapacitySummary string `json:"capacitySummary,omitempty"`
}

// CredentialStatus is what Courier knows of a worker's credential.
type CredentialStatus struct {
	// Plugin names the exec credential plugin, as the Configuration's
	// workerCredentials lists it, that hands the credential out; empty for
	// one the kubeconfig embeds.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Plugin string `json:"plugin,omitempty"`

	// ExpiresAt is when the credential Courier holds expires: the
	// plugin's expirationTimestamp, the embedded token's exp claim (a
	// bound ServiceAccount token's), or the embedded client certificate's
	// notAfter. Unset when it does not expire, as far as Courier can tell.
	// Courier does not use a credential past it.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// RenewedAt is when the plugin last handed out a credential.
	// +optional
	RenewedAt *metav1.Time `json:"renewedAt,omitempty"`
}

// ResourceCapacity is the quota of one resource in one flavor on a worker.
type ResourceCapacity struct {
	// Flavor is the ResourceFlavor.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Flavor string `json:"flavor"`

	// Resource is the resource's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Resource string `json:"resource"`

	// Nominal is the ClusterQueues' nominal quota.
	// +required
	Nominal resource.Quantity `json:"nominal"`

	// Borrowable is what their cohorts may lend them on top.
	// +optional
	Borrowable *resource.Quantity `json:"borrowable,omitempty"`

	// Usage is the quota admitted workloads hold.
	// +required
	Usage resource.Quantity `json:"usage"`

	// Pending is the demand of the workloads Courier sent that wait there.
	// +optional
	Pending *resource.Quantity `json:"pending,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wc
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
// +kubebuilder:printcolumn:name="Capacity",type=string,JSONPath=`.status.capacitySummary`
// +kubebuilder:printcolumn:name="Credential Expires",type=string,JSONPath=`.status.credential.expiresAt`,priority=1
// +kubebuilder:printcolumn:name="Draining",type=string,JSONPath=`.status.conditions[?(@.type=="Draining")].status`,priority=1
// +kubebuilder:printcolumn:name="Preemption Gates",type=string,JSONPath=`.status.preemptionGates`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkerCluster is a cluster Courier may dispatch jobs to. Placement reads
// its labels.
type WorkerCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WorkerClusterSpec `json:"spec"`
	// +optional
	Status WorkerClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkerClusterList is a list of WorkerClusters.
type WorkerClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkerCluster `json:"items"`
}

// PreemptionGatesState says whether a worker's Kueue takes preemption
// gates.
type PreemptionGatesState string

const (
	// PreemptionGatesEnabled: the worker's Kueue lists a copy's gates in
	// its status and preempts for it only once its gates are open.
	PreemptionGatesEnabled PreemptionGatesState = "Enabled"
	// PreemptionGatesDisabled: the worker's Kueue ignores preemption
	// gates, so Courier sends a copy that would have to preempt to one
	// such worker at a time.
	PreemptionGatesDisabled PreemptionGatesState = "Disabled"
)
