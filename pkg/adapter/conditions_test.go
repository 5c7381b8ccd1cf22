package adapter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPhaseChanged(t *testing.T) {
	const t0, t1, t2 = "2026-11-28T10:00:00Z", "2026-11-28T10:00:07Z", "2026-11-28T10:00:09Z"
	cond := func(typ, status, reason, msg, at string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": at}
	}
	suspended := cond("Suspended", "True", "Suspended", "", t0)
	resumed := cond("Suspended", "False", "Resumed", "", t1)
	complete := cond("Complete", "True", "AllJobsCompleted", "", t2)
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	type result struct {
		Changed bool
		At      time.Time
	}
	cases := map[string]struct {
		manager, copy []any
		want          result
	}{
		"neither has conditions": {},
		"the same conditions in another order": {
			manager: []any{resumed, complete}, copy: []any{complete, resumed},
			want: result{At: at(t2)},
		},
		"only a message and a time changed": {
			manager: []any{resumed}, copy: []any{cond("Suspended", "False", "Resumed", "other words", t2)},
			want: result{At: at(t2)},
		},
		"a copy created suspended, the manager's job without a status: the same phase": {
			copy: []any{suspended},
		},
		"the copy resumed": {
			manager: []any{suspended}, copy: []any{resumed},
			want: result{Changed: true, At: at(t1)},
		},
		"the copy resumed, the manager's job without a status": {
			copy: []any{resumed},
			want: result{Changed: true, At: at(t1)},
		},
		"a condition is added: the newest time is its": {
			manager: []any{resumed}, copy: []any{resumed, complete},
			want: result{Changed: true, At: at(t2)},
		},
		"only the reason changes": {
			manager: []any{cond("Ready", "False", "Starting", "", t0)}, copy: []any{cond("Ready", "False", "Pulling", "", t1)},
			want: result{Changed: true, At: at(t1)},
		},
		"a time that does not parse is no time": {
			copy: []any{cond("Ready", "True", "", "", "yesterday")},
			want: result{Changed: true},
		},
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
			changed, at := PhaseChanged(job(tc.manager), job(tc.copy))
			if diff := cmp.Diff(tc.want, result{changed, at}); diff != "" {
				t.Errorf("PhaseChanged() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSuspended(t *testing.T) {
	cases := map[string]struct {
		conds []any
		want  bool
	}{
		"no status":       {},
		"suspended":       {conds: []any{map[string]any{"type": "Suspended", "status": "True"}}, want: true},
		"resumed":         {conds: []any{map[string]any{"type": "Suspended", "status": "False"}}},
		"other condition": {conds: []any{map[string]any{"type": "Complete", "status": "True"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.conds != nil {
				job.Object["status"] = map[string]any{"conditions": tc.conds}
			}
			if got := Suspended(job); got != tc.want {
				t.Errorf("Suspended() = %v, want %v", got, tc.want)
			}
		})
	}
}
