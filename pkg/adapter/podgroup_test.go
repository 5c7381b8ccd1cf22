package adapter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPodGroupNames(t *testing.T) {
	podSpec := func(group string) map[string]any {
		spec := map[string]any{"containers": []any{map[string]any{"name": "c"}}}
		if group != "" {
			spec["schedulingGroup"] = map[string]any{"podGroupName": group}
		}
		return map[string]any{"spec": spec}
	}
	cases := map[string]struct {
		spec map[string]any
		want []string
	}{
		"no gang": {
			spec: map[string]any{"template": podSpec("")},
		},
		"a Job's pod template": {
			spec: map[string]any{"template": podSpec("gang")},
			want: []string{"gang"},
		},
		"nested templates of a JobSet, with repeats": {
			spec: map[string]any{"replicatedJobs": []any{
				map[string]any{"template": map[string]any{"spec": map[string]any{"template": podSpec("b")}}},
				map[string]any{"template": map[string]any{"spec": map[string]any{"template": podSpec("a")}}},
				map[string]any{"template": map[string]any{"spec": map[string]any{"template": podSpec("b")}}},
			}},
			want: []string{"a", "b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PodGroupNames(&unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodGroupNames() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTemplateWorkloadName(t *testing.T) {
	pg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"podGroupTemplateRef": map[string]any{"workload": map[string]any{"workloadName": "training", "podGroupTemplateName": "workers"}},
	}}}
	if got := TemplateWorkloadName(pg); got != "training" {
		t.Errorf("TemplateWorkloadName() = %q, want %q", got, "training")
	}
	if got := TemplateWorkloadName(&unstructured.Unstructured{Object: map[string]any{}}); got != "" {
		t.Errorf("TemplateWorkloadName() of a bare PodGroup = %q, want empty", got)
	}
}
