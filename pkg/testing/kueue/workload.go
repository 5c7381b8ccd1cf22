// Package kueue builds Kueue objects for tests.
package kueue

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// WorkloadWrapper builds a Kueue Workload.
type WorkloadWrapper struct{ kueue.Workload }

// MakeWorkload returns a Workload with one pod set of one pod asking for
// one CPU.
func MakeWorkload(name, ns string) *WorkloadWrapper {
	return &WorkloadWrapper{kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kueue.WorkloadSpec{
			PodSets: []kueue.PodSet{{
				Name:  kueue.DefaultPodSetName,
				Count: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:  "c",
						Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1"),
						}},
					}},
				}},
			}},
		},
	}}
}

// Priority sets the priority value and, when class is not empty, the
// Kueue WorkloadPriorityClass it comes from.
func (w *WorkloadWrapper) Priority(class string, value int32) *WorkloadWrapper {
	w.Spec.Priority = &value
	if class != "" {
		w.Spec.PriorityClassRef = &kueue.PriorityClassRef{Group: kueue.WorkloadPriorityClassGroup, Kind: kueue.WorkloadPriorityClassKind, Name: class}
	}
	return w
}

// Obj returns the Workload.
func (w *WorkloadWrapper) Obj() *kueue.Workload { return &w.Workload }

// Queue sets spec.queueName.
func (w *WorkloadWrapper) Queue(q string) *WorkloadWrapper {
	w.Spec.QueueName = kueue.LocalQueueName(q)
	return w
}

// Count sets the first pod set's count.
func (w *WorkloadWrapper) Count(n int32) *WorkloadWrapper {
	w.Spec.PodSets[0].Count = n
	return w
}

// UID sets the UID.
func (w *WorkloadWrapper) UID(uid string) *WorkloadWrapper {
	w.Workload.UID = types.UID(uid)
	return w
}

// Check adds an admission check state.
func (w *WorkloadWrapper) Check(name string, state kueue.CheckState, msg string) *WorkloadWrapper {
	w.Status.AdmissionChecks = append(w.Status.AdmissionChecks, kueue.AdmissionCheckState{
		Name: kueue.AdmissionCheckReference(name), State: state, Message: msg,
	})
	return w
}

// Condition sets a status condition; at orders conditions of the same type
// on several Workloads.
func (w *WorkloadWrapper) Condition(t string, status metav1.ConditionStatus, reason string, at time.Time) *WorkloadWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: reason, LastTransitionTime: metav1.NewTime(at),
	})
	return w
}

// ReserveQuota marks quota reserved in a ClusterQueue.
func (w *WorkloadWrapper) ReserveQuota(cq string) *WorkloadWrapper {
	w.Status.Admission = &kueue.Admission{
		ClusterQueue: kueue.ClusterQueueReference(cq),
		PodSetAssignments: []kueue.PodSetAssignment{{
			Name:  w.Spec.PodSets[0].Name,
			Count: ptr.To(w.Spec.PodSets[0].Count),
		}},
	}
	return w.Condition(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", time.Time{})
}

// Assigned records, in the first pod set's assignment (ReserveQuota
// first), that Kueue gave it total of res from flavor.
func (w *WorkloadWrapper) Assigned(res corev1.ResourceName, flavor, total string) *WorkloadWrapper {
	psa := &w.Status.Admission.PodSetAssignments[0]
	if psa.Flavors == nil {
		psa.Flavors = map[corev1.ResourceName]kueue.ResourceFlavorReference{}
		psa.ResourceUsage = corev1.ResourceList{}
	}
	psa.Flavors[res] = kueue.ResourceFlavorReference(flavor)
	psa.ResourceUsage[res] = resource.MustParse(total)
	return w
}

// Admit marks the Workload admitted at a time.
func (w *WorkloadWrapper) Admit(at time.Time) *WorkloadWrapper {
	return w.Condition(kueue.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", at)
}

// ClusterName sets status.clusterName.
func (w *WorkloadWrapper) ClusterName(name string) *WorkloadWrapper {
	w.Status.ClusterName = ptr.To(name)
	return w
}

// Nominated sets status.nominatedClusterNames.
func (w *WorkloadWrapper) Nominated(names ...string) *WorkloadWrapper {
	w.Status.NominatedClusterNames = names
	return w
}

// Active sets spec.active.
func (w *WorkloadWrapper) Active(a bool) *WorkloadWrapper {
	w.Spec.Active = ptr.To(a)
	return w
}

// Label sets a label.
func (w *WorkloadWrapper) Label(k, v string) *WorkloadWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Owner sets the controlling owner.
func (w *WorkloadWrapper) Owner(apiVersion, kind, name, uid string) *WorkloadWrapper {
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true),
	})
	return w
}

// Evicted counts n evictions for a reason in status.schedulingStats, as
// Kueue does on every eviction.
func (w *WorkloadWrapper) Evicted(reason string, n int32) *WorkloadWrapper {
	if w.Status.SchedulingStats == nil {
		w.Status.SchedulingStats = &kueue.SchedulingStats{}
	}
	w.Status.SchedulingStats.Evictions = append(w.Status.SchedulingStats.Evictions,
		kueue.WorkloadSchedulingStatsEviction{Reason: reason, Count: n})
	return w
}

// Annotation sets an annotation.
func (w *WorkloadWrapper) Annotation(k, v string) *WorkloadWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Deleting marks the Workload as being deleted.
func (w *WorkloadWrapper) Deleting(at time.Time) *WorkloadWrapper {
	w.DeletionTimestamp = ptr.To(metav1.NewTime(at))
	return w
}
