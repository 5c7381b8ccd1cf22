package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DispatchPolicySpec says which worker clusters a Courier admission check
// may dispatch to.
// +kubebuilder:validation:XValidation:rule="has(self.clusters) || has(self.clusterSelector)",message="name clusters, select them by label, or both"
type DispatchPolicySpec struct {
	// Clusters names WorkerClusters.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSelector selects WorkerClusters by label. Together with
	// clusters, the policy uses the union of both.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=dp

// DispatchPolicy is named by an AdmissionCheck's parameters
// (apiGroup courier.dev, kind DispatchPolicy) and chooses the workers its
// workloads may run on.
type DispatchPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DispatchPolicySpec `json:"spec"`
}

// +kubebuilder:object:root=true

// DispatchPolicyList is a list of DispatchPolicies.
type DispatchPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DispatchPolicy `json:"items"`
}
