package adapter

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds of Kubernetes' native gang scheduling (KEP-4671). A pod names its
// PodGroup in spec.schedulingGroup.podGroupName and is not scheduled until
// the PodGroup exists; a PodGroup may point at the core Workload that holds
// its template (spec.podGroupTemplateRef.workload.workloadName).
var (
	PodGroupGVK           = schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1alpha2", Kind: "PodGroup"}
	SchedulingWorkloadGVK = schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1alpha2", Kind: "Workload"}
)

// PodGroupNames returns, sorted and without repeats, the PodGroups that the
// pod templates anywhere in a job's spec name.
func PodGroupNames(job *unstructured.Unstructured) []string {
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if sg, ok := t["schedulingGroup"].(map[string]any); ok {
				if name, ok := sg["podGroupName"].(string); ok && name != "" {
					names = append(names, name)
				}
			}
			for _, child := range t {
				walk(child)
			}
		case []any:
			for _, child := range t {
				walk(child)
			}
		}
	}
	walk(job.Object["spec"])
	slices.Sort(names)
	return slices.Compact(names)
}

// TemplateWorkloadName returns the core Workload a PodGroup takes its
// template from, or "".
func TemplateWorkloadName(podGroup *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(podGroup.Object, "spec", "podGroupTemplateRef", "workload", "workloadName")
	return name
}
