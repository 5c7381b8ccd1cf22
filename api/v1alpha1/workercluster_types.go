package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkerClusterSpec says how to reach a worker cluster.
type WorkerClusterSpec struct {
	// Kubeconfig locates the kubeconfig Courier uses to reach the worker.
	// +required
	Kubeconfig KubeconfigSource `json:"kubeconfig"`
}

// KubeconfigSource is where a kubeconfig is kept.
type KubeconfigSource struct {
	// SecretRef names a Secret in Courier's namespace and the key holding
	// the kubeconfig. The kubeconfig must embed its credentials: file
	// references, exec and auth-provider plugins, basic auth and
	// insecure-skip-tls-verify are refused.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`
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

	// DisconnectedSince is when the worker was first found unreachable;
	// retries do not move it, and workerLostTimeout counts from it. It is
	// cleared on connecting. Configuration errors do not set it: they need a
	// person, not a re-dispatch of the worker's jobs.
	// +optional
	DisconnectedSince *metav1.Time `json:"disconnectedSince,omitempty"`

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
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wc
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
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
