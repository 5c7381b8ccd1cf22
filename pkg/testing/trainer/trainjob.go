// Package trainer builds Kubeflow Trainer objects for tests.
package trainer

import (
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TrainJobWrapper builds a TrainJob.
type TrainJobWrapper struct{ trainer.TrainJob }

// MakeTrainJob returns a TrainJob of the torch-distributed
// ClusterTrainingRuntime, with one node.
func MakeTrainJob(name, ns string) *TrainJobWrapper {
	return &TrainJobWrapper{trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{
				Name:     "torch-distributed",
				APIGroup: ptr.To(trainer.GroupVersion.Group),
				Kind:     ptr.To(trainer.ClusterTrainingRuntimeKind),
			},
			Trainer: &trainer.Trainer{NumNodes: ptr.To[int32](1)},
		},
	}}
}

// Obj returns the TrainJob.
func (w *TrainJobWrapper) Obj() *trainer.TrainJob { return &w.TrainJob }

// Label sets a label.
func (w *TrainJobWrapper) Label(k, v string) *TrainJobWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Queue sets Kueue's queue-name label.
func (w *TrainJobWrapper) Queue(q string) *TrainJobWrapper {
	return w.Label("kueue.x-k8s.io/queue-name", q)
}

// ManagedBy sets spec.managedBy.
func (w *TrainJobWrapper) ManagedBy(v string) *TrainJobWrapper {
	w.Spec.ManagedBy = ptr.To(v)
	return w
}

// Suspend sets spec.suspend.
func (w *TrainJobWrapper) Suspend(s bool) *TrainJobWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}

// RuntimeRef points the TrainJob at a ClusterTrainingRuntime.
func (w *TrainJobWrapper) RuntimeRef(name string) *TrainJobWrapper {
	w.Spec.RuntimeRef.Name = name
	return w
}

// RuntimePatch adds an entry owned by manager that labels the pods of the
// node replicated job with label=value.
func (w *TrainJobWrapper) RuntimePatch(manager, label, value string) *TrainJobWrapper {
	return w.nodePodPatch(manager, trainer.PodTemplatePatch{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{label: value}},
	})
}

// NodeEnv adds a RuntimePatch entry owned by manager that sets env on the
// node container, which Trainer's webhook forbids.
func (w *TrainJobWrapper) NodeEnv(manager, name, value string) *TrainJobWrapper {
	return w.nodePodPatch(manager, trainer.PodTemplatePatch{
		Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{
			Name: "node",
			Env:  []corev1.EnvVar{{Name: name, Value: value}},
		}}},
	})
}

// nodePodPatch adds an entry owned by manager that patches the pod
// template of the node replicated job.
func (w *TrainJobWrapper) nodePodPatch(manager string, pod trainer.PodTemplatePatch) *TrainJobWrapper {
	w.Spec.RuntimePatches = append(w.Spec.RuntimePatches, trainer.RuntimePatch{
		Manager: manager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name:     "node",
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &pod}},
			}}},
		}},
	})
	return w
}

// GPUs asks for n GPUs and one CPU per node, requests equal to limits as
// extended resources require.
func (w *TrainJobWrapper) GPUs(n int64) *TrainJobWrapper {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
	w.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}
	return w
}

// HoldPods adds a RuntimePatch entry owned by manager that gives the node
// pods a scheduling gate nobody lifts: the job runs, its pods stay Pending.
func (w *TrainJobWrapper) HoldPods(manager string) *TrainJobWrapper {
	return w.nodePodPatch(manager, trainer.PodTemplatePatch{
		Spec: &trainer.PodSpecPatch{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/hold"}}},
	})
}

// RunForAnnotation is the pod annotation kwok's pod-complete stage reads
// its delay from, in the local clusters (tools/localcluster).
const RunForAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"

// PodAnnotation adds a RuntimePatch entry owned by manager that annotates
// the pods of the node replicated job with key=value.
func (w *TrainJobWrapper) PodAnnotation(manager, key, value string) *TrainJobWrapper {
	return w.nodePodPatch(manager, trainer.PodTemplatePatch{
		Metadata: &metav1.ObjectMeta{Annotations: map[string]string{key: value}},
	})
}

// RunFor adds a RuntimePatch entry owned by manager that keeps the node
// pods running for d on simulated (kwok) nodes, before they succeed.
func (w *TrainJobWrapper) RunFor(manager string, d time.Duration) *TrainJobWrapper {
	return w.PodAnnotation(manager, RunForAnnotation, d.String())
}
