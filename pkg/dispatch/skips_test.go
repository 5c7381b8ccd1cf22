package dispatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Issue 14: a workload whose every worker was passed over (a namespace
// missing everywhere) was not looked at again when the pass-over ended.
func TestSkipNotesNext(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		notes map[string]time.Time
		want  time.Duration
	}{
		"no note":              {want: 0},
		"one note in force":    {notes: map[string]time.Time{"a": t0.Add(30 * time.Second)}, want: 30*time.Second + time.Millisecond},
		"the first one to end": {notes: map[string]time.Time{"a": t0.Add(time.Minute), "b": t0.Add(10 * time.Second)}, want: 10*time.Second + time.Millisecond},
		"a note that ended":    {notes: map[string]time.Time{"a": t0.Add(-time.Second)}, want: 0},
		"one ended, one not":   {notes: map[string]time.Time{"a": t0.Add(-time.Second), "b": t0.Add(5 * time.Second)}, want: 5*time.Second + time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSkipNotes()
			uid := types.UID("wl")
			for c, until := range tc.notes {
				s.add(uid, c, "passed over", until)
			}
			s.add("other", "a", "passed over", t0.Add(time.Second))
			if diff := cmp.Diff(tc.want, s.next(uid, t0)); diff != "" {
				t.Errorf("next() (-want +got):\n%s", diff)
			}
		})
	}
}

// A Workload whose passes keep failing (a worker down for minutes) is
// looked at again within maxErrorBackoff once they stop failing, not after
// controller-runtime's 1,000 s.
func TestPassRateLimiterCapsTheBackoff(t *testing.T) {
	limiter := passRateLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "wl"}}
	var last time.Duration
	for range 30 {
		last = limiter.When(req)
	}
	if last > maxErrorBackoff {
		t.Errorf("backoff after 30 failed passes = %s, want at most %s", last, maxErrorBackoff)
	}
	limiter.Forget(req)
	if got := limiter.When(req); got > 10*time.Millisecond {
		t.Errorf("backoff after a pass that did not fail = %s, want the first step", got)
	}
}
