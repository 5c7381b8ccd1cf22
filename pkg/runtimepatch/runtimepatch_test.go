package runtimepatch

import (
	"errors"
	"fmt"
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
	worker := &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"zone": "west"}},
	}}
	courierEntry := trainer.RuntimePatch{Manager: CourierManager, TrainingRuntimeSpec: worker}
	users := func(n int) []trainer.RuntimePatch {
		var out []trainer.RuntimePatch
		for i := range n {
			out = append(out, entry(fmt.Sprintf("example.com/user-%d", i)))
		}
		return out
	}
	cases := map[string]struct {
		in      []trainer.RuntimePatch
		worker  *trainer.TrainingRuntimeSpecPatch
		want    []trainer.RuntimePatch
		wantErr bool
	}{
		"no entries": {},
		"only the Kueue entry": {
			in: []trainer.RuntimePatch{entry(KueueManager)},
		},
		"user and third-party entries travel unchanged, the Kueue entry does not": {
			in:   []trainer.RuntimePatch{entry("example.com/user"), entry(KueueManager), entry("vendor.io/tuner")},
			want: []trainer.RuntimePatch{entry("example.com/user"), entry("vendor.io/tuner")},
		},
		"the worker's patch is Courier's own entry, last": {
			in:     []trainer.RuntimePatch{entry("example.com/user"), entry(KueueManager)},
			worker: worker,
			want:   []trainer.RuntimePatch{entry("example.com/user"), courierEntry},
		},
		"an entry of Courier's manager on the manager's job does not travel": {
			in:   []trainer.RuntimePatch{entry(CourierManager), entry("example.com/user")},
			want: []trainer.RuntimePatch{entry("example.com/user")},
		},
		"fifteen entries leave room for the worker's": {
			in:     append(users(15), entry(KueueManager)),
			worker: worker,
			want:   append(users(15), courierEntry),
		},
		"sixteen entries leave no room for the worker's": {
			in:      append(users(16), entry(KueueManager)),
			worker:  worker,
			wantErr: true,
		},
		"sixteen entries travel to a worker without a patch": {
			in:   append(users(16), entry(KueueManager)),
			want: users(16),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append([]trainer.RuntimePatch(nil), tc.in...)
			got, err := ForWorker(tc.in, tc.worker)
			var full *Full
			if (err != nil) != tc.wantErr || (err != nil && !errors.As(err, &full)) {
				t.Fatalf("ForWorker() error = %v, want a *Full: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ForWorker() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in); diff != "" {
				t.Errorf("ForWorker() modified its input:\n%s", diff)
			}
		})
	}
}

func TestValidateSpec(t *testing.T) {
	path := field.NewPath("spec", "runtimePatch")
	cases := map[string]struct {
		in   *trainer.TrainingRuntimeSpecPatch
		want []string
	}{
		"none":                           {},
		"labels only":                    {in: entry("x.io/a").TrainingRuntimeSpec},
		"env on a sidecar is allowed":    {in: envEntry("x.io/a", "sidecar").TrainingRuntimeSpec},
		"env on the node container":      {in: envEntry("x.io/a", "node").TrainingRuntimeSpec, want: []string{"spec.runtimePatch.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env"}},
		"env on the dataset initializer": {in: envEntry("x.io/a", "dataset-initializer").TrainingRuntimeSpec, want: []string{"spec.runtimePatch.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, err := range ValidateSpec(tc.in, path) {
				got = append(got, err.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateSpec() fields mismatch (-want +got):\n%s", diff)
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
