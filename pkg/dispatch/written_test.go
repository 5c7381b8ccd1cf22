package dispatch

import (
	"testing"
	"time"
)

func TestOwnWrites(t *testing.T) {
	w := newOwnWrites()
	w.note("wl", "10", t0)
	w.note("wl", "11", t0.Add(time.Second))
	cases := map[string]struct {
		version string
		at      time.Time
		want    bool
	}{
		"the version the first write of a pass replaced": {version: "10", at: t0.Add(time.Second), want: true},
		"the version the second write replaced":          {version: "11", at: t0.Add(time.Second), want: true},
		"the version Courier wrote":                      {version: "12", at: t0.Add(time.Second)},
		"long after the writes":                          {version: "11", at: t0.Add(time.Second + writtenTTL + time.Millisecond)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := w.stale("wl", tc.version, tc.at); got != tc.want {
				t.Errorf("stale(%q) = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
	if w.stale("other", "10", t0) {
		t.Error("another Workload's version is stale")
	}
}

func TestOwnWritesForgetsExpiredWorkloads(t *testing.T) {
	w := newOwnWrites()
	w.note("old", "10", t0)
	w.note("recent", "20", t0.Add(writtenTTL+2*time.Second))
	w.note("new", "30", t0.Add(2*writtenTTL+time.Second))
	if _, ok := w.byUID["old"]; ok {
		t.Error("a Workload written more than a TTL ago is still remembered")
	}
	if _, ok := w.byUID["recent"]; !ok {
		t.Error("a Workload written within the TTL is forgotten")
	}
}
