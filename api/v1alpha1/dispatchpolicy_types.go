package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DispatchStrategy says how many of the eligible clusters get a copy of a
// workload at a time.
// +kubebuilder:validation:Enum=AllAtOnce;Incremental;BestFit
type DispatchStrategy string

const (
	// AllAtOnce copies the workload to every eligible cluster; the first
	// whose Kueue admits it wins.
	AllAtOnce DispatchStrategy = "AllAtOnce"
	// Incremental copies it to stepSize more clusters, in score order,
	// every roundTimeout.
	Incremental DispatchStrategy = "Incremental"
	// BestFit copies it to the fanOut best clusters by score, and to the
	// next ones each time roundTimeout passes without an admission.
	BestFit DispatchStrategy = "BestFit"
)

// MovesExhaustedAction is what becomes of a workload moved more than a
// policy's maxMoves times for one reason.
// +kubebuilder:validation:Enum=Reject;Wait
type MovesExhaustedAction string

const (
	// RejectWhenMovesExhausted rejects the workload's check, and Kueue
	// deactivates it.
	RejectWhenMovesExhausted MovesExhaustedAction = "Reject"
	// WaitWhenMovesExhausted keeps it pending, sent nowhere, until someone
	// removes its courier.dev/moves annotation.
	WaitWhenMovesExhausted MovesExhaustedAction = "Wait"
)

// DispatchPolicySpec says which worker clusters a Courier admission check
// may dispatch to, and how it chooses among them.
// +kubebuilder:validation:XValidation:rule="has(self.clusters) || has(self.clusterSelector)",message="name clusters, select them by label, or both"
// +kubebuilder:validation:XValidation:rule="!has(self.fanOut) || !has(self.strategy) || self.strategy == 'BestFit'",message="fanOut applies to the BestFit strategy only"
// +kubebuilder:validation:XValidation:rule="!has(self.stepSize) || (has(self.strategy) && self.strategy == 'Incremental')",message="stepSize applies to the Incremental strategy only"
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

	// Strategy says how many eligible clusters get a copy at a time.
	// Defaults to BestFit.
	// +optional
	Strategy DispatchStrategy `json:"strategy,omitempty"`

	// FanOut is how many of the best clusters get a copy in BestFit's
	// first round, and how many more in each later one. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	FanOut *int32 `json:"fanOut,omitempty"`

	// StepSize is how many clusters Incremental adds each round. Defaults
	// to 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	StepSize *int32 `json:"stepSize,omitempty"`

	// RoundTimeout is how long a round waits for a worker's Kueue to admit
	// the workload before more clusters get a copy. Defaults to 1m.
	// +optional
	RoundTimeout *metav1.Duration `json:"roundTimeout,omitempty"`

	// MaxWaitTime, if set, is how long a workload may wait for a worker;
	// past it, the check goes Retry with each worker's reason, and Kueue
	// requeues the workload.
	// +optional
	MaxWaitTime *metav1.Duration `json:"maxWaitTime,omitempty"`

	// MaxMoves is how many times a workload may be dispatched again after
	// workers evicted or deactivated it for one same reason (preempted,
	// deactivated by a requeue limit, stopped by a fence); once more than
	// that, onMovesExhausted says what becomes of it, and the check's
	// message lists each worker's reason. Defaults to 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	MaxMoves *int32 `json:"maxMoves,omitempty"`

	// OnMovesExhausted is what becomes of a workload moved more than
	// maxMoves times for one reason: Reject (the check is Rejected, and
	// Kueue deactivates the workload) or Wait (it stays pending and goes
	// nowhere until the annotation courier.dev/moves is removed from it).
	// Defaults to Reject.
	// +optional
	OnMovesExhausted MovesExhaustedAction `json:"onMovesExhausted,omitempty"`

	// Filter is a CEL expression, true for the clusters that may take the
	// workload. It sees `cluster` (name, labels, capacity), `workload`
	// (namespace, queue, priority, labels, podSets with count and
	// requests) and `object` (the job). A cluster whose evaluation fails
	// is not eligible, and an event says why.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Filter string `json:"filter,omitempty"`

	// Score is a CEL expression giving a number per cluster, with the
	// variables of filter; higher is better, ties go by name. Defaults to
	// the share of the workload's scarcest resource the cluster would
	// still have free with the workload admitted.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Score string `json:"score,omitempty"`
}

// DispatchPolicyStatus is what Courier found of a DispatchPolicy.
type DispatchPolicyStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Valid says whether filter and score compile.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dp
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// DispatchPolicy is named by an AdmissionCheck's parameters
// (apiGroup courier.dev, kind DispatchPolicy) and chooses the workers its
// workloads may run on.
type DispatchPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DispatchPolicySpec `json:"spec"`
	// +optional
	Status DispatchPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DispatchPolicyList is a list of DispatchPolicies.
type DispatchPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DispatchPolicy `json:"items"`
}
