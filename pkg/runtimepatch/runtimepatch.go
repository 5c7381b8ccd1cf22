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

// ForWorker returns the entries a worker's copy carries: every entry except
// the manager-side Kueue one, each exactly as it is, manager and time
// included. The input is not modified.
func ForWorker(patches []trainer.RuntimePatch) []trainer.RuntimePatch {
	out := make([]trainer.RuntimePatch, 0, len(patches))
	for _, p := range patches {
		if p.Manager == KueueManager {
			continue
		}
		out = append(out, *p.DeepCopy())
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Validate reports what Trainer's webhook on a worker would refuse in the
// entries that travel: a manager that is not a domain-prefixed path, and env
// on the node and initializer containers.
func Validate(patches []trainer.RuntimePatch, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, p := range patches {
		pp := path.Index(i)
		if p.Manager == KueueManager {
			continue
		}
		errs = append(errs, validation.IsDomainPrefixedPath(pp.Child("manager"), p.Manager)...)
		if p.TrainingRuntimeSpec == nil || p.TrainingRuntimeSpec.Template == nil || p.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		for j, rj := range p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			if rj.Template == nil || rj.Template.Spec == nil || rj.Template.Spec.Template == nil || rj.Template.Spec.Template.Spec == nil {
				continue
			}
			cp := pp.Child("trainingRuntimeSpec", "template", "spec", "replicatedJobs").Index(j).
				Child("template", "spec", "template", "spec", "containers")
			for k, c := range rj.Template.Spec.Template.Spec.Containers {
				if len(c.Env) > 0 && slices.Contains(reservedEnvContainers, c.Name) {
					errs = append(errs, field.Forbidden(cp.Index(k).Child("env"),
						fmt.Sprintf("Trainer forbids env on the %q container in runtimePatches; set it through the TrainJob's trainer or initializer fields", c.Name)))
				}
			}
		}
	}
	return errs
}
