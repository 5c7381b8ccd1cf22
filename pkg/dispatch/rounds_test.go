package dispatch

import (
	"testing"
	"time"
)

func TestRoundStarts(t *testing.T) {
	s := newRoundStarts()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		at        time.Duration
		nominated bool
		want      time.Duration
	}{
		{at: 0, nominated: false, want: 0},                             // first plan: round 0 now
		{at: time.Second, nominated: true, want: time.Second},          // first seen nominated
		{at: 3 * time.Minute, nominated: true, want: time.Second},      // rounds count from there
		{at: 4 * time.Minute, nominated: false, want: 4 * time.Minute}, // evicted, nomination cleared: forgotten
		{at: 5 * time.Minute, nominated: true, want: 5 * time.Minute},  // admitted again: new rounds
	}
	for i, st := range steps {
		got := s.since("wl", st.nominated, t0.Add(st.at))
		if want := t0.Add(st.want); !got.Equal(want) {
			t.Errorf("step %d: rounds since %s, want %s", i, got.Sub(t0), st.want)
		}
	}
	s.since("gone", true, t0.Add(5*time.Minute))
	s.since("other", true, t0.Add(roundsForgetAfter+6*time.Minute))
	if _, ok := s.at["gone"]; ok {
		t.Error("a start older than roundsForgetAfter was kept")
	}
}
