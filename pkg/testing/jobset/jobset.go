// Package jobset builds JobSet objects for tests.
package jobset

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// JobSetWrapper builds a JobSet.
type JobSetWrapper struct{ jobset.JobSet }

// MakeJobSet returns a JobSet with no replicated jobs.
func MakeJobSet(name, ns string) *JobSetWrapper {
	return &JobSetWrapper{jobset.JobSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}}
}

// Obj returns the JobSet.
func (w *JobSetWrapper) Obj() *jobset.JobSet { return &w.JobSet }

// ReplicatedJob adds a replicated job of replicas Jobs, each of one pod.
func (w *JobSetWrapper) ReplicatedJob(name string, replicas int32) *JobSetWrapper {
	w.Spec.ReplicatedJobs = append(w.Spec.ReplicatedJobs, jobset.ReplicatedJob{
		Name:     name,
		Replicas: replicas,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](1),
			Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		}},
	})
	return w
}

// Suspend sets spec.suspend.
func (w *JobSetWrapper) Suspend(s bool) *JobSetWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}
