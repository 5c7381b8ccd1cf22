// Package v1alpha1 is Courier's API, group courier.dev: WorkerCluster, a
// worker cluster Courier dispatches to, and the condition types and reasons
// Courier writes.
//
// +kubebuilder:object:generate=true
// +groupName=courier.dev
package v1alpha1
