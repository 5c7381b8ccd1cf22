package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestPodRequests(t *testing.T) {
	container := func(restart *corev1.ContainerRestartPolicy, requests, limits corev1.ResourceList) corev1.Container {
		return corev1.Container{RestartPolicy: restart, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
	}
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	cases := map[string]struct {
		spec corev1.PodSpec
		want map[corev1.ResourceName]int64
	}{
		"containers add up": {
			spec: corev1.PodSpec{Containers: []corev1.Container{container(nil, cpu("1"), nil), container(nil, cpu("500m"), nil)}},
			want: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1500},
		},
		"a limit stands in for a missing request": {
			spec: corev1.PodSpec{Containers: []corev1.Container{container(nil, nil, corev1.ResourceList{gpu: resource.MustParse("2")})}},
			want: map[corev1.ResourceName]int64{gpu: 2000},
		},
		"the largest init container if larger": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(nil, cpu("4"), nil), container(nil, cpu("2"), nil)},
				Containers:     []corev1.Container{container(nil, cpu("1"), nil)},
			},
			want: map[corev1.ResourceName]int64{corev1.ResourceCPU: 4000},
		},
		"sidecars run with the init containers after them and with the containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(always, cpu("1"), nil), container(nil, cpu("3"), nil)},
				Containers:     []corev1.Container{container(nil, cpu("2"), nil)},
			},
			want: map[corev1.ResourceName]int64{corev1.ResourceCPU: 4000},
		},
		"the pod overhead on top": {
			spec: corev1.PodSpec{Containers: []corev1.Container{container(nil, cpu("1"), nil)}, Overhead: cpu("250m")},
			want: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1250},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodRequests(&tc.spec)); diff != "" {
				t.Errorf("PodRequests() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHuman(t *testing.T) {
	cases := map[string]struct {
		res   corev1.ResourceName
		milli int64
		want  string
	}{
		"whole GPUs":          {res: "nvidia.com/gpu", milli: 8000, want: "8"},
		"cores, as a decimal": {res: corev1.ResourceCPU, milli: 1500, want: "1.5"},
		"memory in binary":    {res: corev1.ResourceMemory, milli: 16 << 30 * 1000, want: "16Gi"},
		"hugepages are bytes": {res: "hugepages-2Mi", milli: 2 << 20 * 1000, want: "2Mi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Human(tc.res, tc.milli)); diff != "" {
				t.Errorf("Human() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithPending(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	base := Capacity{Known: true, Flavors: []Flavor{
		{Name: "a100", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 8000, Pending: 1000}}},
		{Name: "cpu-only", Resources: map[corev1.ResourceName]Quota{corev1.ResourceCPU: {Nominal: 64000}}},
	}}
	got := base.WithPending([]PodSet{{Count: 2, Requests: map[corev1.ResourceName]int64{gpu: 1000, corev1.ResourceCPU: 500}}})
	want := Capacity{Known: true, Flavors: []Flavor{
		{Name: "a100", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 8000, Pending: 3000}}},
		{Name: "cpu-only", Resources: map[corev1.ResourceName]Quota{corev1.ResourceCPU: {Nominal: 64000, Pending: 1000}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithPending() mismatch (-want +got):\n%s", diff)
	}
	if base.Flavors[0].Resources[gpu].Pending != 1000 {
		t.Error("WithPending() changed its receiver")
	}
	if diff := cmp.Diff(Capacity{}, Capacity{}.WithPending(nil)); diff != "" {
		t.Errorf("unknown capacity changed:\n%s", diff)
	}
}
