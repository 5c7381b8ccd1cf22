package workercluster

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/runtimepatch"
)

// runtimePatchCondition checks the worker's runtimePatch against Trainer's
// rules, here on the manager, so that a person sees the mistake on the
// WorkerCluster instead of in remote creates that fail. While it is False,
// TrainJobs are not sent to the worker; other kinds still are.
func runtimePatchCondition(wc *courier.WorkerCluster, now time.Time) metav1.Condition {
	cond := metav1.Condition{Type: courier.WorkerClusterRuntimePatchValid, ObservedGeneration: wc.Generation, LastTransitionTime: metav1.NewTime(now)}
	errs := runtimepatch.ValidateSpec(wc.Spec.RuntimePatch, field.NewPath("spec", "runtimePatch"))
	if len(errs) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, courier.ReasonRuntimePatchForbidden
		cond.Message = fmt.Sprintf("%v. TrainJobs are not sent to this worker until the patch is fixed.", errs.ToAggregate())
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, courier.ReasonRuntimePatchAccepted
	cond.Message = "The runtimePatch follows Trainer's rules."
	if wc.Spec.RuntimePatch == nil {
		cond.Message = "No runtimePatch."
	}
	return cond
}
