package kueue

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// ClusterQueueWrapper builds a Kueue ClusterQueue.
type ClusterQueueWrapper struct{ kueue.ClusterQueue }

// MakeClusterQueue returns a ClusterQueue open to every namespace, with no
// quota and no admission checks.
func MakeClusterQueue(name string) *ClusterQueueWrapper {
	return &ClusterQueueWrapper{kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kueue.ClusterQueueSpec{NamespaceSelector: &metav1.LabelSelector{}},
	}}
}

// Obj returns the ClusterQueue.
func (w *ClusterQueueWrapper) Obj() *kueue.ClusterQueue { return &w.ClusterQueue }

// Check adds an AdmissionCheck for every flavor.
func (w *ClusterQueueWrapper) Check(name string) *ClusterQueueWrapper {
	if w.Spec.AdmissionChecksStrategy == nil {
		w.Spec.AdmissionChecksStrategy = &kueue.AdmissionChecksStrategy{}
	}
	w.Spec.AdmissionChecksStrategy.AdmissionChecks = append(w.Spec.AdmissionChecksStrategy.AdmissionChecks,
		kueue.AdmissionCheckStrategyRule{Name: kueue.AdmissionCheckReference(name)})
	return w
}

// LocalQueueWrapper builds a Kueue LocalQueue.
type LocalQueueWrapper struct{ kueue.LocalQueue }

// MakeLocalQueue returns a LocalQueue feeding the ClusterQueue cq.
func MakeLocalQueue(name, ns, cq string) *LocalQueueWrapper {
	return &LocalQueueWrapper{kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)},
	}}
}

// Obj returns the LocalQueue.
func (w *LocalQueueWrapper) Obj() *kueue.LocalQueue { return &w.LocalQueue }
