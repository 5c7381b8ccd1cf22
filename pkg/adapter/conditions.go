package adapter

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ConditionsDiffer reports whether two jobs' status conditions differ in
// any condition's type, status or reason: what tells a job's phase, as
// opposed to its counts of pods. Times and messages do not count.
func ConditionsDiffer(a, b *unstructured.Unstructured) bool {
	return !slices.Equal(phaseOf(a), phaseOf(b))
}

// phaseOf lists a job's conditions as "type/status/reason", sorted.
func phaseOf(job *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedFieldNoCopy(job.Object, "status", "conditions")
	list, _ := conds.([]any)
	out := make([]string, 0, len(list))
	for _, c := range list {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		out = append(out, strings.Join([]string{t, s, r}, "/"))
	}
	slices.Sort(out)
	return out
}
