package dispatch

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestCreatedCopies(t *testing.T) {
	cases := map[string]struct {
		after    time.Duration
		cluster  string
		wantUID  types.UID
		wantSeen bool
	}{
		"just created":                 {after: time.Second, cluster: "w1", wantUID: "copy", wantSeen: true},
		"created createdTTL ago":       {after: createdTTL, cluster: "w1", wantUID: "copy", wantSeen: true},
		"created longer ago than that": {after: createdTTL + time.Second, cluster: "w1"},
		"created on another worker":    {after: time.Second, cluster: "w2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newCreatedCopies()
			c.add("w1", "Workload", "wl", "copy", t0)
			uid, ok := c.get(tc.cluster, "Workload", "wl", t0.Add(tc.after))
			if uid != tc.wantUID || ok != tc.wantSeen {
				t.Errorf("get = %q, %t; want %q, %t", uid, ok, tc.wantUID, tc.wantSeen)
			}
		})
	}
}

// A burst's creates each cost O(1); what expired goes at most once a TTL,
// so the map holds at most two TTLs of creates.
func TestCreatedCopiesForgetsWhatExpired(t *testing.T) {
	c := newCreatedCopies()
	for i := range 300 {
		c.add("w1", "Workload", types.UID(fmt.Sprint(i)), "copy", t0.Add(time.Duration(i)*time.Second))
	}
	if n := len(c.copies); n > int(2*createdTTL/time.Second)+1 {
		t.Errorf("%d copies remembered after 300 s of one create a second, want at most two TTLs' worth", n)
	}
	if _, ok := c.get("w1", "Workload", "299", t0.Add(299*time.Second)); !ok {
		t.Error("the last copy created is forgotten")
	}
}

// BenchmarkCreatedCopiesAdd adds copies at bench-scale's rate, 56 creates
// a second: before the sweep was bounded, every add scanned the 30 s of
// creates the map holds.
func BenchmarkCreatedCopiesAdd(b *testing.B) {
	c := newCreatedCopies()
	for i := 0; b.Loop(); i++ {
		c.add("w1", "Workload", types.UID(fmt.Sprint(i)), "copy", t0.Add(time.Duration(i)*time.Second/56))
	}
}
