package adapter

import (
	"iter"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PhaseChanged reports whether a job copy's conditions tell another phase
// than the manager job's, by any condition's type, status or reason, and
// when the copy's newest condition changed, zero if none says. Times,
// messages and counts of pods do not count, nor does a Suspended condition
// that is True: a copy is created suspended, and its worker's Kueue
// resumes it once it admits it, moments later.
func PhaseChanged(manager, copy *unstructured.Unstructured) (bool, time.Time) {
	phase, at := phaseOf(copy)
	before, _ := phaseOf(manager)
	return !slices.Equal(phase, before), at
}

// Suspended reports whether a job's conditions say it is suspended.
func Suspended(job *unstructured.Unstructured) bool {
	for m := range conditions(job) {
		if m["type"] == "Suspended" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// conditions yields the entries of a job's status.conditions, skipping
// any that is not an object: every kind Courier carries keeps its
// conditions there, in the shape of metav1.Condition.
func conditions(job *unstructured.Unstructured) iter.Seq[map[string]any] {
	return func(yield func(map[string]any) bool) {
		raw, _, _ := unstructured.NestedFieldNoCopy(job.Object, "status", "conditions")
		list, _ := raw.([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok && !yield(m) {
				return
			}
		}
	}
}

// phaseOf lists a job's conditions as "type/status/reason", sorted, and
// returns the newest lastTransitionTime among them.
func phaseOf(job *unstructured.Unstructured) ([]string, time.Time) {
	var out []string
	var newest time.Time
	for m := range conditions(job) {
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		if t == "Suspended" && s == "True" {
			continue
		}
		r, _ := m["reason"].(string)
		out = append(out, strings.Join([]string{t, s, r}, "/"))
		if at := transitionTime(m); at.After(newest) {
			newest = at
		}
	}
	slices.Sort(out)
	return out, newest
}

// transitionTime is a condition's lastTransitionTime; zero when it has
// none or it does not parse.
func transitionTime(cond map[string]any) time.Time {
	ts, _ := cond["lastTransitionTime"].(string)
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return time.Time{}
	}
	return at
}
