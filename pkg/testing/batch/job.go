// Package batch builds batch/v1 Jobs for tests.
package batch

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// JobWrapper builds a Job.
type JobWrapper struct{ batchv1.Job }

// MakeJob returns a Job of one pod that is never restarted.
func MakeJob(name, ns string) *JobWrapper {
	return &JobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}}
}

// Obj returns the Job.
func (w *JobWrapper) Obj() *batchv1.Job { return &w.Job }

// Label sets a label.
func (w *JobWrapper) Label(k, v string) *JobWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Queue sets Kueue's queue-name label.
func (w *JobWrapper) Queue(q string) *JobWrapper { return w.Label("kueue.x-k8s.io/queue-name", q) }

// ManagedBy sets spec.managedBy.
func (w *JobWrapper) ManagedBy(v string) *JobWrapper {
	w.Spec.ManagedBy = ptr.To(v)
	return w
}

// CPU sets the container's CPU request.
func (w *JobWrapper) CPU(q string) *JobWrapper { return w.Request(corev1.ResourceCPU, q) }

// Request sets the container's request of one resource, and its limit
// too for an extended resource, which the API server requires.
func (w *JobWrapper) Request(res corev1.ResourceName, q string) *JobWrapper {
	c := &w.Spec.Template.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[res] = resource.MustParse(q)
	if strings.Contains(string(res), "/") {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[res] = resource.MustParse(q)
	}
	return w
}

// SchedulingGate holds the Job's pods unscheduled: its Workload keeps its
// quota for as long as the test needs.
func (w *JobWrapper) SchedulingGate(name string) *JobWrapper {
	w.Spec.Template.Spec.SchedulingGates = append(w.Spec.Template.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return w
}

// PodAnnotation sets an annotation of the pod template.
func (w *JobWrapper) PodAnnotation(k, v string) *JobWrapper {
	if w.Spec.Template.Annotations == nil {
		w.Spec.Template.Annotations = map[string]string{}
	}
	w.Spec.Template.Annotations[k] = v
	return w
}
