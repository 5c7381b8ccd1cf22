package dispatch

import (
	"maps"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Labels and finalizers Kueue puts on Workloads that a copy must not carry
// over, or that Courier removes when it deletes a copy.
const (
	kueueJobUIDLabel            = "kueue.x-k8s.io/job-uid"
	kueueResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use"
)

// remoteWorkload is the copy of a manager Workload sent to a worker: same
// name, namespace, labels and annotations, and spec; the origin label, the
// manager Workload's UID and admission; no owner, status or Kueue's job
// UID, which names a manager-side object. It has no finalizer of Courier's:
// once the worker's Kueue adopts it, the job copy owns it and it goes with
// that, and the job copy itself says how the job ended should the copy be
// removed first.
func remoteWorkload(wl *kueue.Workload, origin string) *kueue.Workload {
	labels := maps.Clone(wl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	delete(labels, kueueJobUIDLabel)
	labels[courier.OriginLabel] = origin
	annotations := maps.Clone(wl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[courier.ManagerUIDAnnotation] = string(wl.UID)
	annotations[courier.AdmissionAnnotation] = strconv.Itoa(int(evictions(wl)))
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:        wl.Name,
			Namespace:   wl.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: *wl.Spec.DeepCopy(),
	}
}

// isCopyOf reports whether a remote Workload is Courier's copy of wl, and
// not of an earlier Workload of the same name.
func isCopyOf(remote, wl *kueue.Workload) bool {
	return remote.Annotations[courier.ManagerUIDAnnotation] == string(wl.UID)
}

// ofEarlierAdmission reports whether a remote copy was made for an
// admission of its Workload before the last eviction. Copies made before
// Courier recorded admissions count as current.
func ofEarlierAdmission(copy metav1.Object, wl *kueue.Workload) bool {
	n, err := strconv.Atoi(copy.GetAnnotations()[courier.AdmissionAnnotation])
	return err == nil && int32(n) < evictions(wl)
}
