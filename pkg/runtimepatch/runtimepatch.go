// Package runtimepatch holds the rules for a TrainJob's spec.runtimePatches
// as Courier copies them to a worker: which entries travel, and which
// entries a worker's Trainer webhook would refuse, so that the manager can
// reject them up front instead of retrying a create that cannot succeed.
package runtimepatch

import (
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KueueManager owns the entry the manager's Kueue writes when it admits a
// TrainJob. It describes the manager's admission, not the worker's, and the
// worker's Kueue writes its own, so it never travels.
const KueueManager = "kueue.x-k8s.io/manager"

// Containers whose env Trainer reserves for its own APIs (Trainer and
// Initializer); patching their env is refused by Trainer's webhook.
var reservedEnvContainers = []string{"node", "dataset-initializer", "model-initializer"}

// CourierManager owns Courier's own entry, which carries the runtimePatch
// of the worker the TrainJob is sent to.
const CourierManager = "courier.dev/dispatcher"

// MaxEntries is how many entries Trainer's CRD allows in a TrainJob's
// spec.runtimePatches.
const MaxEntries = 16

// ForWorker returns the entries a worker's copy carries: every entry
// except the manager-side Kueue one, each exactly as it is, manager and
// time included, and Courier's own entry with the worker's patch, if it
// has one. An entry of Courier's manager on the manager's job describes no
// worker and does not travel. The input is not modified. A job whose
// entries leave no room for Courier's is a *Full error.
func ForWorker(patches []trainer.RuntimePatch, worker *trainer.TrainingRuntimeSpecPatch) ([]trainer.RuntimePatch, error) {
	out := make([]trainer.RuntimePatch, 0, len(patches)+1)
	for _, p := range patches {
		if p.Manager == KueueManager || p.Manager == CourierManager {
			continue
		}
		out = append(out, *p.DeepCopy())
	}
	if worker != nil {
		if err := Room(patches); err != nil {
			return nil, err
		}
		out = append(out, trainer.RuntimePatch{Manager: CourierManager, TrainingRuntimeSpec: worker.DeepCopy()})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Room returns a *Full error when the entries that travel leave no room
// for Courier's own, and nil when they do.
func Room(patches []trainer.RuntimePatch) error {
	n := 0
	for _, p := range patches {
		if p.Manager != KueueManager && p.Manager != CourierManager {
			n++
		}
	}
	if n >= MaxEntries {
		return &Full{Entries: n}
	}
	return nil
}

// Full is a TrainJob whose RuntimePatches leave no room for Courier's
// entry.
type Full struct {
	Entries int
}

func (f *Full) Error() string {
	return fmt.Sprintf("the TrainJob has %d RuntimePatches besides Kueue's, the most Trainer allows, so the worker's own runtimePatch cannot be added", f.Entries)
}

// Validate reports what Trainer's webhook on a worker would refuse in the
// entries that travel: a manager that is not a domain-prefixed path, and
// what ValidateSpec refuses.
func Validate(patches []trainer.RuntimePatch, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, p := range patches {
		pp := path.Index(i)
		if p.Manager == KueueManager {
			continue
		}
		errs = append(errs, validation.IsDomainPrefixedPath(pp.Child("manager"), p.Manager)...)
		errs = append(errs, ValidateSpec(p.TrainingRuntimeSpec, pp.Child("trainingRuntimeSpec"))...)
	}
	return errs
}

// ValidateSpec reports what Trainer refuses in one entry's patch: env on
// the node and initializer containers, which Trainer's own APIs set. (A
// patch cannot name command, args, image or resources at all: Trainer's
// schema has no such fields.)
func ValidateSpec(spec *trainer.TrainingRuntimeSpecPatch, path *field.Path) field.ErrorList {
	if spec == nil || spec.Template == nil || spec.Template.Spec == nil {
		return nil
	}
	var errs field.ErrorList
	for j, rj := range spec.Template.Spec.ReplicatedJobs {
		if rj.Template == nil || rj.Template.Spec == nil || rj.Template.Spec.Template == nil || rj.Template.Spec.Template.Spec == nil {
			continue
		}
		pod := rj.Template.Spec.Template.Spec
		cp := path.Child("template", "spec", "replicatedJobs").Index(j).Child("template", "spec", "template", "spec")
		for k, c := range pod.Containers {
			if len(c.Env) > 0 && slices.Contains(reservedEnvContainers, c.Name) {
				errs = append(errs, field.Forbidden(cp.Child("containers").Index(k).Child("env"),
					fmt.Sprintf("Trainer forbids env on the %q container in runtimePatches; set it through the TrainJob's trainer or initializer fields", c.Name)))
			}
		}
		for k, c := range pod.InitContainers {
			if len(c.Env) > 0 && slices.Contains(reservedEnvContainers, c.Name) {
				errs = append(errs, field.Forbidden(cp.Child("initContainers").Index(k).Child("env"),
					fmt.Sprintf("Trainer forbids env on the %q container in runtimePatches; set it through the TrainJob's initializer fields", c.Name)))
			}
		}
	}
	return errs
}
