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

// A worker's failed create passes it over for the namespace's jobs until
// the note ends or a create there goes through, and a pass comes when it
// ends.
func TestSkipNotesFailing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		namespace string
		at        time.Time
		created   bool
		want      string
		wantNext  time.Duration
	}{
		"the namespace's next job":         {namespace: "team-a", at: t0.Add(10 * time.Second), want: "failed", wantNext: 20*time.Second + time.Millisecond},
		"another namespace's job":          {namespace: "team-b", at: t0.Add(10 * time.Second)},
		"once the note ended":              {namespace: "team-a", at: t0.Add(31 * time.Second)},
		"once a create there went through": {namespace: "team-a", at: t0.Add(10 * time.Second), created: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSkipNotes()
			s.addFailing("w1", "team-a", "failed", t0.Add(30*time.Second))
			if tc.created {
				s.clearFailing("w1", "team-a")
			}
			if diff := cmp.Diff(tc.want, s.failingFor("wl", "w1", tc.namespace, tc.at)); diff != "" {
				t.Errorf("failingFor() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNext, s.next("wl", tc.at)); diff != "" {
				t.Errorf("next() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff("", s.failingFor("wl", "w2", "team-a", tc.at)); diff != "" {
				t.Errorf("failingFor() another worker (-want +got):\n%s", diff)
			}
		})
	}
}
