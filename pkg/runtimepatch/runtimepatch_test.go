package runtimepatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func entry(manager string) trainer.RuntimePatch {
	t := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return trainer.RuntimePatch{
		Manager: manager,
		Time:    &t,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Metadata: &metav1.ObjectMeta{Labels: map[string]string{"owner": manager}},
		}},
	}
}

func envEntry(manager, container string) trainer.RuntimePatch {
	return trainer.RuntimePatch{
		Manager: manager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name: "node",
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{
						Name: container,
						Env:  []corev1.EnvVar{{Name: "A", Value: "b"}},
					}}},
				}}},
			}}},
		}},
	}
}

func TestForWorker(t *testing.T) {
	cases := map[string]struct {
		in   []trainer.RuntimePatch
		want []trainer.RuntimePatch
	}{
		"no entries": {},
		"only the Kueue entry": {
			in: []trainer.RuntimePatch{entry(KueueManager)},
		},
		"user and third-party entries travel unchanged, the Kueue entry does not": {
			in:   []trainer.RuntimePatch{entry("example.com/user"), entry(KueueManager), entry("vendor.io/tuner")},
			want: []trainer.RuntimePatch{entry("example.com/user"), entry("vendor.io/tuner")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append([]trainer.RuntimePatch(nil), tc.in...)
			if diff := cmp.Diff(tc.want, ForWorker(tc.in)); diff != "" {
				t.Errorf("ForWorker() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in); diff != "" {
				t.Errorf("ForWorker() modified its input:\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	path := field.NewPath("spec", "runtimePatches")
	cases := map[string]struct {
		in   []trainer.RuntimePatch
		want []string
	}{
		"valid entries": {
			in: []trainer.RuntimePatch{entry("example.com/user"), envEntry("example.com/user", "sidecar")},
		},
		"env on the node container": {
			in:   []trainer.RuntimePatch{envEntry("example.com/user", "node")},
			want: []string{"spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env"},
		},
		"env on an initializer container": {
			in:   []trainer.RuntimePatch{entry("example.com/a"), envEntry("example.com/b", "model-initializer")},
			want: []string{"spec.runtimePatches[1].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env"},
		},
		"a manager that is not domain-prefixed": {
			in:   []trainer.RuntimePatch{entry("user")},
			want: []string{"spec.runtimePatches[0].manager"},
		},
		"the Kueue entry stays on the manager and is not checked": {
			in: []trainer.RuntimePatch{envEntry(KueueManager, "node")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, err := range Validate(tc.in, path) {
				got = append(got, err.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate() fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
