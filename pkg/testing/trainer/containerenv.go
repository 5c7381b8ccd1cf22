package trainer

import (
	corev1 "k8s.io/api/core/v1"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// ContainerEnv adds a RuntimePatch entry owned by manager that sets env on
// the named container of the node pods; Trainer forbids it on its own
// containers ("node" and the initializers).
func (w *TrainJobWrapper) ContainerEnv(manager, container, name, value string) *TrainJobWrapper {
	return w.nodePodPatch(manager, trainer.PodTemplatePatch{
		Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{
			Name: container,
			Env:  []corev1.EnvVar{{Name: name, Value: value}},
		}}},
	})
}

// InitContainerEnv is ContainerEnv for an init container.
func (w *TrainJobWrapper) InitContainerEnv(manager, container, name, value string) *TrainJobWrapper {
	return w.nodePodPatch(manager, trainer.PodTemplatePatch{
		Spec: &trainer.PodSpecPatch{InitContainers: []trainer.ContainerPatch{{
			Name: container,
			Env:  []corev1.EnvVar{{Name: name, Value: value}},
		}}},
	})
}
