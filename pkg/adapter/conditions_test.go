package adapter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestConditionsDiffer(t *testing.T) {
	cond := func(typ, status, reason, msg, at string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": at}
	}
	suspended := cond("Suspended", "True", "Suspended", "", "t0")
	resumed := cond("Suspended", "False", "Resumed", "", "t1")
	cases := map[string]struct {
		a, b []any
		want bool
	}{
		"neither has conditions":                 {},
		"the same conditions in another order":   {a: []any{suspended, cond("Created", "True", "", "", "t0")}, b: []any{cond("Created", "True", "", "", "t0"), suspended}},
		"only a message and a time changed":      {a: []any{resumed}, b: []any{cond("Suspended", "False", "Resumed", "other words", "t2")}},
		"the first condition appears":            {b: []any{suspended}, want: true},
		"a condition's status and reason change": {a: []any{suspended}, b: []any{resumed}, want: true},
		"a condition is added":                   {a: []any{resumed}, b: []any{resumed, cond("Complete", "True", "", "", "t3")}, want: true},
		"only the reason changes":                {a: []any{cond("Ready", "False", "Starting", "", "")}, b: []any{cond("Ready", "False", "Pulling", "", "")}, want: true},
	}
	job := func(conds []any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if conds != nil {
			u.Object["status"] = map[string]any{"conditions": conds, "jobsStatus": []any{}}
		}
		return u
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ConditionsDiffer(job(tc.a), job(tc.b))); diff != "" {
				t.Errorf("ConditionsDiffer() (-want +got):\n%s", diff)
			}
		})
	}
}
