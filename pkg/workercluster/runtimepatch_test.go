package workercluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

func TestRuntimePatchCondition(t *testing.T) {
	nodeEnv := trainertesting.MakeTrainJob("x", "ns").NodeEnv("example.com/w", "A", "b").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec
	labels := trainertesting.MakeTrainJob("x", "ns").RuntimePatch("example.com/w", "zone", "west").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec
	cases := map[string]struct {
		patch *trainer.TrainingRuntimeSpecPatch
		want  metav1.Condition
	}{
		"none": {want: metav1.Condition{Status: metav1.ConditionTrue, Reason: courier.ReasonRuntimePatchAccepted, Message: "No runtimePatch."}},
		"pod labels": {patch: labels,
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: courier.ReasonRuntimePatchAccepted, Message: "The runtimePatch follows Trainer's rules."}},
		"env on the node container": {patch: nodeEnv, want: metav1.Condition{Status: metav1.ConditionFalse, Reason: courier.ReasonRuntimePatchForbidden,
			Message: `spec.runtimePatch.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env: Forbidden: Trainer forbids env on the "node" container in runtimePatches; set it through the TrainJob's trainer or initializer fields. TrainJobs are not sent to this worker until the patch is fixed.`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wc := couriertesting.MakeWorkerCluster("w").Obj()
			wc.Spec.RuntimePatch = tc.patch
			got := runtimePatchCondition(wc, time.Now())
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "Type", "LastTransitionTime", "ObservedGeneration")); diff != "" {
				t.Errorf("runtimePatchCondition() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
