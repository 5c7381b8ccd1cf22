// Package kueue builds Kueue objects for tests.
package kueue

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
