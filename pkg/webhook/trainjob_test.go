package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/courierdev/courier/pkg/adapter"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

func TestValidateTrainJob(t *testing.T) {
	courierJob := func() *trainertesting.TrainJobWrapper {
		return trainertesting.MakeTrainJob("tj", "ns").ManagedBy(adapter.TrainJobManagedBy)
	}
	renamed := courierJob().Suspend(true).RuntimePatch("example.com/b", "team", "a").Obj()
	cases := map[string]struct {
		old, job *trainer.TrainJob
		want     field.ErrorList
	}{
		"a valid new job": {
			job: courierJob().RuntimePatch("example.com/tool", "team", "a").Obj(),
		},
		"a manager that is not a domain-prefixed path": {
			job: courierJob().RuntimePatch("tool", "team", "a").Obj(),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "runtimePatches").Index(0).Child("manager"), "tool",
				"must be a domain-prefixed path (such as \"acme.io/foo\")")},
		},
		"env on the node container": {
			job: courierJob().NodeEnv("example.com/tool", "A", "b").Obj(),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "runtimePatches").Index(0).
				Child("trainingRuntimeSpec", "template", "spec", "replicatedJobs").Index(0).
				Child("template", "spec", "template", "spec", "containers").Index(0).Child("env"),
				`Trainer forbids env on the "node" container in runtimePatches; set it through the TrainJob's trainer or initializer fields`)},
		},
		"a job Courier does not dispatch is left to Trainer": {
			job: trainertesting.MakeTrainJob("tj", "ns").NodeEnv("tool", "A", "b").Obj(),
		},
		"patches change while suspended": {
			old: courierJob().Suspend(true).Obj(),
			job: courierJob().Suspend(true).RuntimePatch("example.com/tool", "team", "a").Obj(),
		},
		"patches change in the update that resumes the job": {
			old: courierJob().Suspend(true).Obj(),
			job: courierJob().Suspend(false).RuntimePatch("example.com/tool", "team", "a").Obj(),
		},
		"patches change while running": {
			old: courierJob().Suspend(false).Obj(),
			job: courierJob().Suspend(false).RuntimePatch("example.com/tool", "team", "a").Obj(),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "runtimePatches"),
				"RuntimePatches can change only while the TrainJob is suspended before or after the update; suspend it first, or change them in the update that resumes it")},
		},
		"a running job's other fields change": {
			old: courierJob().Suspend(false).RuntimePatch("example.com/tool", "team", "a").Obj(),
			job: courierJob().Suspend(false).RuntimePatch("example.com/tool", "team", "a").Label("x", "y").Obj(),
		},
		"an entry's manager is rewritten": {
			old: courierJob().Suspend(true).RuntimePatch("example.com/a", "team", "a").Obj(),
			job: renamed,
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "runtimePatches").Index(0).Child("manager"),
				`an entry's manager is immutable (was "example.com/a"); remove the entry and add a new one in a later update`)},
		},
		"an entry is added before another": {
			old: courierJob().Suspend(true).RuntimePatch("example.com/a", "team", "a").Obj(),
			job: courierJob().Suspend(true).RuntimePatch("example.com/b", "team", "b").RuntimePatch("example.com/a", "team", "a").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ValidateTrainJob(tc.old, tc.job)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateTrainJob() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrainJobWarnings(t *testing.T) {
	full := trainertesting.MakeTrainJob("tj", "ns").ManagedBy(adapter.TrainJobManagedBy)
	for i := range 16 {
		full.RuntimePatch("example.com/m"+string(rune('a'+i)), "k", "v")
	}
	cases := map[string]struct {
		job  *trainer.TrainJob
		want []string
	}{
		"room left": {job: trainertesting.MakeTrainJob("tj", "ns").ManagedBy(adapter.TrainJobManagedBy).Obj()},
		"no room for a worker's patch": {
			job:  full.Obj(),
			want: []string{"the TrainJob has 16 RuntimePatches besides Kueue's, the most Trainer allows, so the worker's own runtimePatch cannot be added; it can go only to workers without a runtimePatch"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, trainJobWarnings(tc.job)); diff != "" {
				t.Errorf("trainJobWarnings() (-want +got):\n%s", diff)
			}
		})
	}
}
