package placement

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

func TestCompile(t *testing.T) {
	cases := map[string]struct {
		spec       courier.DispatchPolicySpec
		want       Policy
		wantFilter string
		wantScore  string
		wantErr    string
	}{
		"defaults": {
			want: Policy{Strategy: courier.BestFit, FanOut: 1, StepSize: 1, RoundTimeout: time.Minute, MaxMoves: 3, OnMovesExhausted: courier.RejectWhenMovesExhausted},
		},
		"everything set": {
			spec: courier.DispatchPolicySpec{Strategy: courier.Incremental, StepSize: ptr.To[int32](3),
				RoundTimeout: &metav1.Duration{Duration: 30 * time.Second}, MaxWaitTime: &metav1.Duration{Duration: time.Hour},
				MaxMoves: ptr.To[int32](0), OnMovesExhausted: courier.WaitWhenMovesExhausted,
				Filter: `cluster.name != "b"`, Score: `1.5`},
			want: Policy{Strategy: courier.Incremental, FanOut: 1, StepSize: 3, RoundTimeout: 30 * time.Second, MaxWaitTime: time.Hour,
				MaxMoves: 0, OnMovesExhausted: courier.WaitWhenMovesExhausted},
			wantFilter: `cluster.name != "b"`, wantScore: `1.5`,
		},
		"a bad filter": {
			spec:    courier.DispatchPolicySpec{Filter: `1`},
			wantErr: "filter: gives int, want bool",
		},
		"both bad: both named": {
			spec:    courier.DispatchPolicySpec{Filter: `1`, Score: `"x"`},
			wantErr: "filter: gives int, want bool; score: gives string, want int, uint or double",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Compile(tc.spec)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got.Filter != nil && got.Filter.Expression != tc.wantFilter || (got.Filter == nil) != (tc.wantFilter == "") {
				t.Errorf("Filter = %+v, want %q", got.Filter, tc.wantFilter)
			}
			if got.Score != nil && got.Score.Expression != tc.wantScore || (got.Score == nil) != (tc.wantScore == "") {
				t.Errorf("Score = %+v, want %q", got.Score, tc.wantScore)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Policy{}, "Filter", "Score")); diff != "" {
				t.Errorf("Compile() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func dispatchPolicy(uid string, generation int64, filter string) *courier.DispatchPolicy {
	p := &courier.DispatchPolicy{Spec: courier.DispatchPolicySpec{Clusters: []string{"a"}, Filter: filter}}
	p.UID, p.Generation = k8stypes.UID("uid-"+uid), generation
	return p
}

func TestCache(t *testing.T) {
	var c Cache
	p1 := dispatchPolicy("p", 1, `true`)
	first, err := c.Get(p1)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	again, _ := c.Get(p1)
	if again.Filter != first.Filter {
		t.Errorf("the same generation was compiled again")
	}

	// A new generation replaces the entry; its compile error is cached.
	p2 := dispatchPolicy("p", 2, `1`)
	for range 2 {
		if _, err := c.Get(p2); err == nil || err.Error() != "filter: gives int, want bool" {
			t.Errorf("Get(generation 2) error = %v", err)
		}
	}
	if e := c.entries[p2.UID]; e.key.generation != 2 || e.err == nil {
		t.Errorf("entry = %+v, want generation 2 with its error", e)
	}

	// A stale read of generation 1 is compiled but does not replace it.
	if _, err := c.Get(p1); err != nil {
		t.Errorf("Get(generation 1) after 2: %v", err)
	}
	if e := c.entries[p2.UID]; e.key.generation != 2 {
		t.Errorf("a stale generation replaced the entry: %+v", e)
	}

	// A spec changed under the same generation (no API server to bump it)
	// is compiled again.
	p3 := dispatchPolicy("p", 2, `false`)
	if _, err := c.Get(p3); err != nil {
		t.Errorf("Get(changed spec): %v", err)
	}

	c.Forget(p1.UID)
	if len(c.entries) != 0 {
		t.Errorf("Forget left %d entries", len(c.entries))
	}
	if _, err := c.Get(nil); err == nil {
		t.Errorf("Get(nil) gave no error")
	}
}

func TestCacheBounded(t *testing.T) {
	var c Cache
	for i := range maxCacheEntries + 10 {
		if _, err := c.Get(dispatchPolicy(fmt.Sprint(i), 1, ``)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.entries) > maxCacheEntries {
		t.Errorf("the cache holds %d entries, want at most %d", len(c.entries), maxCacheEntries)
	}
}

// TestCacheConcurrent is for the race detector.
func TestCacheConcurrent(t *testing.T) {
	var c Cache
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for g := range 20 {
				if _, err := c.Get(dispatchPolicy("p", int64(g%3+i%2), `cluster.name == "a"`)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
