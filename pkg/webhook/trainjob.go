package webhook

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/runtimepatch"
	"github.com/courierdev/courier/pkg/watchdecode"
)

var runtimePatchesPath = field.NewPath("spec", "runtimePatches")

// trainJobValidator refuses on the manager what Trainer's webhook would
// refuse on a worker. The manager often runs no Trainer webhook, and a
// TrainJob refused only there is refused after Kueue reserved its quota,
// with an immutable managedBy: its owner must delete and resubmit it.
type trainJobValidator struct {
	decoder admission.Decoder
}

func (v *trainJobValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	// Managed fields are about half the bytes of either object, and
	// nothing here reads them.
	job := &trainer.TrainJob{}
	if err := v.decoder.DecodeRaw(runtime.RawExtension{Raw: watchdecode.WithoutManagedFields(req.Object.Raw)}, job); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *trainer.TrainJob
	if req.Operation == admissionv1.Update {
		old = &trainer.TrainJob{}
		if err := v.decoder.DecodeRaw(runtime.RawExtension{Raw: watchdecode.WithoutManagedFields(req.OldObject.Raw)}, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if errs := ValidateTrainJob(old, job); len(errs) > 0 {
		return denied(trainer.GroupVersion.WithKind(trainer.TrainJobKind).GroupKind(), job.Name, errs)
	}
	return admission.Allowed("").WithWarnings(trainJobWarnings(job)...)
}

// ValidateTrainJob checks a TrainJob Courier dispatches, on create (old is
// nil) and update, by Trainer's rules for RuntimePatches: each entry's
// manager is a domain-prefixed path and never changes, env is not patched
// into containers Trainer fills itself, and the patches change only while
// the job is suspended before or after the update. TrainJobs that Courier
// does not dispatch are left to Trainer.
func ValidateTrainJob(old, job *trainer.TrainJob) field.ErrorList {
	if ptr.Deref(job.Spec.ManagedBy, "") != adapter.TrainJobManagedBy {
		return nil
	}
	errs := runtimepatch.Validate(job.Spec.RuntimePatches, runtimePatchesPath)
	if old == nil {
		return errs
	}
	errs = append(errs, managerChanges(old.Spec.RuntimePatches, job.Spec.RuntimePatches)...)
	if !equality.Semantic.DeepEqual(old.Spec.RuntimePatches, job.Spec.RuntimePatches) &&
		!ptr.Deref(old.Spec.Suspend, false) && !ptr.Deref(job.Spec.Suspend, false) {
		errs = append(errs, field.Forbidden(runtimePatchesPath,
			"RuntimePatches can change only while the TrainJob is suspended before or after the update; suspend it first, or change them in the update that resumes it"))
	}
	return errs
}

// managerChanges reports entries whose manager was rewritten in place: at
// one index, the old manager is gone and the new one is new. Adding and
// removing entries is allowed.
func managerChanges(old, patches []trainer.RuntimePatch) field.ErrorList {
	managers := func(ps []trainer.RuntimePatch) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.Manager
		}
		return out
	}
	before, after := managers(old), managers(patches)
	var errs field.ErrorList
	for i := range min(len(before), len(after)) {
		if before[i] != after[i] && !slices.Contains(after, before[i]) && !slices.Contains(before, after[i]) {
			errs = append(errs, field.Forbidden(runtimePatchesPath.Index(i).Child("manager"),
				fmt.Sprintf("an entry's manager is immutable (was %q); remove the entry and add a new one in a later update", before[i])))
		}
	}
	return errs
}

// trainJobWarnings says what the job may run into without being wrong.
func trainJobWarnings(job *trainer.TrainJob) []string {
	if ptr.Deref(job.Spec.ManagedBy, "") != adapter.TrainJobManagedBy {
		return nil
	}
	if err := runtimepatch.Room(job.Spec.RuntimePatches); err != nil {
		return []string{err.Error() + "; it can go only to workers without a runtimePatch"}
	}
	return nil
}
