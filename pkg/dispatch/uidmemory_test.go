package dispatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestUIDMemory(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	const ttl = time.Minute
	cases := map[string]struct {
		adds []time.Duration // after start, for UIDs a, b, c...
		at   time.Duration
		want map[string]bool
	}{
		"remembered within the TTL": {
			adds: []time.Duration{0, 30 * time.Second},
			at:   time.Minute,
			want: map[string]bool{"a": true, "b": true},
		},
		"forgotten after the TTL": {
			adds: []time.Duration{0, 30 * time.Second},
			at:   61 * time.Second,
			want: map[string]bool{"a": false, "b": true},
		},
		"empty UIDs are not remembered": {
			adds: nil,
			at:   0,
			want: map[string]bool{"": false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newUIDMemory(ttl)
			m.add("", start)
			for i, d := range tc.adds {
				m.add(types.UID(string(rune('a'+i))), start.Add(d))
			}
			got := map[string]bool{}
			for uid := range tc.want {
				got[uid] = m.has(types.UID(uid), start.Add(tc.at))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("has (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUIDMemoryStaysBounded: however long Courier runs, the memory holds
// no more than two TTLs of adds.
func TestUIDMemoryStaysBounded(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	const ttl = time.Minute
	m := newUIDMemory(ttl)
	largest := 0
	for i := range 600 { // One add a second for ten minutes.
		m.add(types.UID(fmt.Sprint(i)), start.Add(time.Duration(i)*time.Second))
		largest = max(largest, len(m.uids))
	}
	if limit := 2*int(ttl/time.Second) + 1; largest > limit {
		t.Errorf("the memory held %d UIDs at most, want at most %d (two TTLs of adds)", largest, limit)
	}
}

// BenchmarkUIDMemoryAdd adds to a memory holding a TTL's worth of UIDs at
// 100 a second: an add costs the same however many it holds.
func BenchmarkUIDMemoryAdd(b *testing.B) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	m := newUIDMemory(2 * time.Minute)
	for i := range 12000 {
		m.add(types.UID(fmt.Sprint("pre-", i)), start.Add(time.Duration(i)*10*time.Millisecond))
	}
	now := start.Add(2 * time.Minute)
	b.ResetTimer()
	for i := range b.N {
		m.add(types.UID(fmt.Sprint(i)), now)
	}
}
