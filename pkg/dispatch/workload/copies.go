package workload

import (
	"maps"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
)

// GVK is the kind of a Workload and of its copies.
var GVK = kueue.SchemeGroupVersion.WithKind("Workload")

// Labels and finalizers Kueue puts on Workloads that a copy must not carry
// over, or that Courier removes when it deletes a copy.
const (
	kueueJobUIDLabel = "kueue.x-k8s.io/job-uid"
	// ResourceInUseFinalizer is Kueue's finalizer on a Workload it holds
	// quota for.
	ResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use"
)

// Index finds, in a worker's informers, what Courier created there for one
// manager Workload: its copy, the job's copy and the objects the job
// needs. Reads by it cost what they find, not what the worker holds.
const Index = "courier.dev/workload"

// DepKinds are the kinds of the objects a job may need on a worker besides
// itself.
var DepKinds = []schema.GroupVersionKind{adapter.PodGroupGVK, adapter.SchedulingWorkloadGVK}

// Indexes are the field indexes the dispatcher reads workers' informers
// by; give them to the cluster cache.
func Indexes() map[string]client.IndexerFunc {
	return map[string]client.IndexerFunc{Index: func(o client.Object) []string {
		if name := Of(o); name != "" {
			return []string{name}
		}
		return nil
	}}
}

// Of names the manager Workload a remote object belongs to: a Workload
// copy is named as it; a job copy names it with Kueue's prebuilt marker; a
// PodGroup or core Workload copy with Courier's workload label.
func Of(obj client.Object) string {
	if wl, ok := obj.(*kueue.Workload); ok {
		return wl.Name
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if name := adapter.WorkloadName(u); name != "" {
			return name
		}
	}
	return obj.GetLabels()[courier.WorkloadLabel]
}

// CopyFor is the copy of a manager Workload sent to a worker: same name,
// namespace, labels and annotations, and spec; the origin label, the
// manager Workload's UID and admission; no owner, status or Kueue's job
// UID, which names a manager-side object. It has no finalizer of Courier's:
// once the worker's Kueue adopts it, the job copy owns it and it goes with
// that, and the job copy itself says how the job ended should the copy be
// removed first.
func CopyFor(wl *kueue.Workload, origin string, gated bool) *kueue.Workload {
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
	annotations[courier.AdmissionAnnotation] = strconv.Itoa(int(Evictions(wl)))
	// The manager's gates are its own; a worker that takes gates gets
	// Courier's, which Courier opens on one worker at a time.
	spec := *wl.Spec.DeepCopy()
	spec.PreemptionGates = nil
	if gated {
		spec.PreemptionGates = []kueue.PreemptionGate{{Name: courier.PreemptionGate}}
	}
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:        wl.Name,
			Namespace:   wl.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: spec,
	}
}

// IsCopyOf reports whether a remote Workload is Courier's copy of wl, and
// not of an earlier Workload of the same name.
func IsCopyOf(remote, wl *kueue.Workload) bool {
	return remote.Annotations[courier.ManagerUIDAnnotation] == string(wl.UID)
}

// JobCopyOf reports whether a worker's job copy was made for wl. Copies
// made before Courier recorded the manager Workload's UID on them match by
// name alone.
func JobCopyOf(copy *unstructured.Unstructured, wl *kueue.Workload) bool {
	if adapter.WorkloadName(copy) != wl.Name {
		return false
	}
	uid, ok := copy.GetAnnotations()[courier.ManagerUIDAnnotation]
	return !ok || uid == string(wl.UID)
}

// OfEarlierAdmission reports whether a remote copy was made for an
// admission of its Workload before the last eviction. Copies made before
// Courier recorded admissions count as current.
func OfEarlierAdmission(copy metav1.Object, wl *kueue.Workload) bool {
	n, err := strconv.Atoi(copy.GetAnnotations()[courier.AdmissionAnnotation])
	return err == nil && int32(n) < Evictions(wl)
}

// Owned reports whether a remote object carries origin's label: Courier
// touches nothing else.
func Owned(obj metav1.Object, origin string) bool {
	return obj.GetLabels()[courier.OriginLabel] == origin
}
