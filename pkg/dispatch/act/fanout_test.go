package act

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOnEach(t *testing.T) {
	cases := map[string]struct {
		clusters []string
		want     []string
	}{
		"none":                   {},
		"one, run in the caller": {clusters: []string{"w1"}, want: []string{"w1!"}},
		"several, results in the clusters' order": {
			clusters: []string{"w3", "w1", "w2", "w10"},
			want:     []string{"w3!", "w1!", "w2!", "w10!"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			calls := map[string]int{}
			got := onEach(tc.clusters, func(c string) string {
				mu.Lock()
				calls[c]++
				mu.Unlock()
				return c + "!"
			})
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("onEach() results (-want +got):\n%s", diff)
			}
			for _, c := range tc.clusters {
				if calls[c] != 1 {
					t.Errorf("f(%q) ran %d times, want 1", c, calls[c])
				}
			}
		})
	}
}
