package adapter

import (
	"errors"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/courierdev/courier/pkg/runtimepatch"
)

// TrainJobManagedBy is the manager-side spec.managedBy of a TrainJob
// Courier dispatches. Trainer's CRD accepts only this value besides its own
// default, and the field is immutable.
const TrainJobManagedBy = "kueue.x-k8s.io/multikueue"

var runtimePatchesPath = field.NewPath("spec", "runtimePatches")

// NewTrainJob returns the TrainJob adapter: the generic rules, plus
// RuntimePatches that the worker's Trainer webhook would refuse are
// rejected, the manager-side Kueue entry stays on the manager, and the
// worker's own runtimePatch is Courier's entry.
func NewTrainJob() Adapter {
	return &kindAdapter{
		Kind: Kind{
			GVK:            trainer.GroupVersion.WithKind(trainer.TrainJobKind),
			ManagedByPath:  "spec.managedBy",
			ManagedByValue: TrainJobManagedBy,
		},
		activity: []string{"jobsStatus"},
		// Trainer deletes a TrainJob's JobSet, never the TrainJob itself.
		unheld: true,
		check: func(job *unstructured.Unstructured) field.ErrorList {
			patches, err := runtimePatches(job)
			if err != nil {
				return field.ErrorList{field.Invalid(runtimePatchesPath, nil, err.Error())}
			}
			return runtimepatch.Validate(patches, runtimePatchesPath)
		},
		checkDestination: func(job *unstructured.Unstructured, to Destination) error {
			if to.RuntimePatch == nil {
				return nil
			}
			if errs := runtimepatch.ValidateSpec(to.RuntimePatch, field.NewPath("spec", "runtimePatch")); len(errs) > 0 {
				return &Unsuitable{Message: errs.ToAggregate().Error()}
			}
			patches, err := runtimePatches(job)
			if err != nil {
				return err
			}
			return fullRejection(job, runtimepatch.Room(patches))
		},
		mutate: func(job *unstructured.Unstructured, to Destination) error {
			patches, err := runtimePatches(job)
			if err != nil {
				return err
			}
			out, err := runtimepatch.ForWorker(patches, to.RuntimePatch)
			if err := fullRejection(job, err); err != nil {
				return err
			}
			return setRuntimePatches(job, out)
		},
	}
}

// fullRejection turns a *runtimepatch.Full into a Rejection naming the job.
func fullRejection(job *unstructured.Unstructured, err error) error {
	var full *runtimepatch.Full
	if errors.As(err, &full) {
		return &Rejection{Message: fmt.Sprintf("TrainJob %s/%s cannot go to a worker with a runtimePatch: %v.", job.GetNamespace(), job.GetName(), err)}
	}
	return err
}

func runtimePatches(job *unstructured.Unstructured) ([]trainer.RuntimePatch, error) {
	raw, found, err := unstructured.NestedSlice(job.Object, "spec", "runtimePatches")
	if err != nil || !found {
		return nil, err
	}
	patches := make([]trainer.RuntimePatch, len(raw))
	for i, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("runtimePatches[%d] is not an object", i)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &patches[i]); err != nil {
			return nil, fmt.Errorf("decoding runtimePatches[%d]: %w", i, err)
		}
	}
	return patches, nil
}

func setRuntimePatches(job *unstructured.Unstructured, patches []trainer.RuntimePatch) error {
	if len(patches) == 0 {
		unstructured.RemoveNestedField(job.Object, "spec", "runtimePatches")
		return nil
	}
	raw := make([]any, len(patches))
	for i := range patches {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&patches[i])
		if err != nil {
			return fmt.Errorf("encoding runtimePatches[%d]: %w", i, err)
		}
		raw[i] = m
	}
	return unstructured.SetNestedSlice(job.Object, raw, "spec", "runtimePatches")
}
