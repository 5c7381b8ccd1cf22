package workload

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/courierdev/courier/pkg/adapter"
)

// Job is the manager job of a Workload: the object (nil once it is gone),
// its adapter, its name (known from the Workload even when the object is
// gone), and the objects it needs on a worker besides itself (PodGroups
// and their core Workloads), read from the manager.
type Job struct {
	Obj     *unstructured.Unstructured
	Adapter adapter.Adapter
	Name    string
	Deps    []*unstructured.Unstructured
	// Patches are the workers' own RuntimePatches, by cluster.
	Patches map[string]*trainer.TrainingRuntimeSpecPatch
}
