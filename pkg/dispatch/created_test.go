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
		"created createdKeep ago":      {after: createdKeep, cluster: "w1", wantUID: "copy", wantSeen: true},
		"created longer ago than that": {after: createdKeep + time.Second, cluster: "w1"},
		"created on another worker":    {after: time.Second, cluster: "w2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newCreatedCopies()
			c.add("w1", "Workload", "wl", "copy", "7", t0)
			cc, ok := c.get(tc.cluster, "Workload", "wl", t0.Add(tc.after))
			if cc.uid != tc.wantUID || ok != tc.wantSeen {
				t.Errorf("get = %q, %t; want %q, %t", cc.uid, ok, tc.wantUID, tc.wantSeen)
			}
		})
	}
}

func TestStillUnseen(t *testing.T) {
	created := createdCopy{uid: "copy", version: "7", at: t0}
	cases := map[string]struct {
		after   time.Duration
		deleted bool
		// read is the version the worker's informer has read up to.
		read string
		want bool
	}{
		"created moments ago, not read yet":                  {after: time.Second, read: "6", want: true},
		"created moments ago, read: its event is on its way": {after: time.Second, read: "7", want: true},
		"created moments ago, deleted by Courier since":      {after: time.Second, deleted: true, read: "6"},
		"past createdTTL, read: it went":                     {after: createdTTL + time.Second, read: "9"},
		// A watch backing off for longer than createdTTL after its
		// worker's API server restarted (soak.md, finding 18).
		"past createdTTL, not read yet: it may run": {after: createdTTL + time.Second, read: "6", want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reached := func(version string) bool { return tc.read >= version }
			if got := stillUnseen(created, tc.deleted, t0.Add(tc.after), reached); got != tc.want {
				t.Errorf("stillUnseen = %t, want %t", got, tc.want)
			}
		})
	}
}

// A burst's creates each cost O(1); what expired goes at most once a
// createdTTL, so the map holds at most createdKeep and a createdTTL of
// creates.
func TestCreatedCopiesForgetsWhatExpired(t *testing.T) {
	c := newCreatedCopies()
	const seconds = 1800
	for i := range seconds {
		c.add("w1", "Workload", types.UID(fmt.Sprint(i)), "copy", "7", t0.Add(time.Duration(i)*time.Second))
	}
	if n, most := len(c.copies), int((createdKeep+createdTTL)/time.Second)+1; n > most {
		t.Errorf("%d copies remembered after %d s of one create a second, want at most %d", n, seconds, most)
	}
	if _, ok := c.get("w1", "Workload", types.UID(fmt.Sprint(seconds-1)), t0.Add((seconds-1)*time.Second)); !ok {
		t.Error("the last copy created is forgotten")
	}
}

// BenchmarkCreatedCopiesAdd adds copies at bench-scale's rate, 56 creates
// a second: before the sweep was bounded, every add scanned the 30 s of
// creates the map held.
func BenchmarkCreatedCopiesAdd(b *testing.B) {
	c := newCreatedCopies()
	for i := 0; b.Loop(); i++ {
		c.add("w1", "Workload", types.UID(fmt.Sprint(i)), "copy", "7", t0.Add(time.Duration(i)*time.Second/56))
	}
}
