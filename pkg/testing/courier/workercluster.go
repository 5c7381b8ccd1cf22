// Package courier builds courier.dev objects for tests.
package courier

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// WorkerClusterWrapper builds a WorkerCluster.
type WorkerClusterWrapper struct{ courier.WorkerCluster }

// MakeWorkerCluster returns a WorkerCluster whose kubeconfig is under key
// "kubeconfig" of the Secret with the same name.
func MakeWorkerCluster(name string) *WorkerClusterWrapper {
	return &WorkerClusterWrapper{courier.WorkerCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: courier.WorkerClusterSpec{Kubeconfig: &courier.KubeconfigSource{
			SecretRef: courier.SecretKeyReference{Name: name, Key: "kubeconfig"},
		}},
	}}
}

// Obj returns the WorkerCluster.
func (w *WorkerClusterWrapper) Obj() *courier.WorkerCluster { return &w.WorkerCluster }

// Secret points the kubeconfig at another Secret and key.
func (w *WorkerClusterWrapper) Secret(name, key string) *WorkerClusterWrapper {
	w.Spec.Kubeconfig = &courier.KubeconfigSource{SecretRef: courier.SecretKeyReference{Name: name, Key: key}}
	w.Spec.ClusterProfileRef = nil
	return w
}

// ClusterProfile reaches the worker through a ClusterProfile instead of a
// kubeconfig Secret.
func (w *WorkerClusterWrapper) ClusterProfile(namespace, name string) *WorkerClusterWrapper {
	w.Spec.ClusterProfileRef = &courier.ClusterProfileReference{Namespace: namespace, Name: name}
	w.Spec.Kubeconfig = nil
	return w
}

// Label sets a label.
func (w *WorkerClusterWrapper) Label(k, v string) *WorkerClusterWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}
