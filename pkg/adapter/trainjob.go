package adapter

import (
	"errors"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/courierdev/courier/pkg/runtimepatch"
)

// jobSetGVK is the kind that runs a TrainJob's pods: Trainer makes one
// JobSet per TrainJob, of its name, controlled by it.
var jobSetGVK = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}

// TrainJobManagedBy is the manager-side spec.managedBy of a TrainJob
// Courier dispatches. Trainer's CRD accepts only this value besides its own
// default, and the field is immutable.
const TrainJobManagedBy = "kueue.x-k8s.io/multikueue"

var runtimePatchesPath = field.NewPath("spec", "runtimePatches")

// runtimePatchesField is runtimePatchesPath as Forward names fields.
const runtimePatchesField = "spec.runtimePatches"

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
		// Trainer (v2.3.0) applies the JobSet of any unfinished TrainJob,
		// one being deleted too: in the foreground, its garbage collector
		// and Trainer take turns deleting and re-creating the JobSet, and
		// the delete may not end (seen in the e2e suite). Copies go in the
		// background, and Courier waits for their JobSets instead.
		runner: &jobSetGVK,
		// JobSet labels every pod of its Jobs with its own name, which is
		// the TrainJob's.
		podLabel: jobset.JobSetNameKey,
		verdicts: lru.New(verdictsSize),
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
		// RuntimePatches are compared and written without the worker
		// Kueue's entry, which is the worker's own, and compared without
		// the times Trainer's webhook stamps on each side.
		fieldView: func(field string, v any) any {
			if field != "runtimePatches" {
				return v
			}
			return withoutKueueEntries(v)
		},
		forwards: []string{runtimePatchesField},
		writable: func(field string, remote *unstructured.Unstructured) string {
			if field != runtimePatchesField {
				return ""
			}
			if suspended, _, _ := unstructured.NestedBool(remote.Object, "spec", "suspend"); !suspended {
				return "the TrainJob runs on its worker, and Trainer accepts RuntimePatches changes only while a TrainJob is suspended."
			}
			return ""
		},
		setField: func(out, want *unstructured.Unstructured, field string) (bool, error) {
			if field != runtimePatchesField {
				return false, nil
			}
			have, _, _ := unstructured.NestedSlice(out.Object, "spec", "runtimePatches")
			entries, _, _ := unstructured.NestedSlice(want.Object, "spec", "runtimePatches")
			for _, e := range have {
				if isKueueEntry(e) {
					entries = append(entries, e)
				}
			}
			if len(entries) == 0 {
				unstructured.RemoveNestedField(out.Object, "spec", "runtimePatches")
				return true, nil
			}
			return true, unstructured.SetNestedSlice(out.Object, entries, "spec", "runtimePatches")
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

func isKueueEntry(e any) bool {
	m, ok := e.(map[string]any)
	return ok && m["manager"] == runtimepatch.KueueManager
}

// withoutKueueEntries drops the Kueue entries from a runtimePatches value,
// and the time of the others; nil when none is left. Trainer's webhook
// stamps each entry with the time it was written (observability only, in
// Trainer's words), on the worker's copy when Courier creates it, and on
// the manager's job where Trainer runs there too: the two never agree. It
// modifies v's entries: v is the view's own copy.
func withoutKueueEntries(v any) any {
	entries, ok := v.([]any)
	if !ok {
		return v
	}
	var out []any
	for _, e := range entries {
		if isKueueEntry(e) {
			continue
		}
		if m, ok := e.(map[string]any); ok {
			delete(m, "time")
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
