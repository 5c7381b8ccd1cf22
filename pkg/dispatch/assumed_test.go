package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/pkg/placement"
)

func TestAssumedCopies(t *testing.T) {
	gpus := func(n int32) []placement.PodSet {
		return []placement.PodSet{{Name: "main", Count: n, Requests: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1000}}}
	}
	assumed := func() *assumedCopies {
		a := newAssumedCopies()
		a.add("w1", "one", "ns/lq", gpus(1), t0)
		a.add("w1", "two", "ns/lq", gpus(2), t0.Add(time.Second))
		a.add("w1", "other-queue", "ns/other", gpus(4), t0.Add(time.Second))
		a.add("w2", "three", "ns/lq", gpus(8), t0.Add(time.Second))
		return a
	}
	cases := map[string]struct {
		cluster, queue string
		except         string
		at             time.Time
		shown          []string
		want           []placement.PodSet
	}{
		"every recent copy to the same queue on that worker":      {cluster: "w1", queue: "ns/lq", at: t0.Add(time.Second), want: append(gpus(1), gpus(2)...)},
		"not the workload's own copy":                             {cluster: "w1", queue: "ns/lq", except: "two", at: t0.Add(time.Second), want: gpus(1)},
		"a copy the snapshots never showed counts for assumedTTL": {cluster: "w1", queue: "ns/lq", at: t0.Add(assumedTTL + time.Millisecond), want: gpus(2)},
		"another worker's copies are its own":                     {cluster: "w2", queue: "ns/lq", at: t0.Add(time.Second), want: gpus(8)},
		"nothing assumed on a worker":                             {cluster: "w3", queue: "ns/lq", at: t0},
		"not a copy the snapshot shows":                           {cluster: "w1", queue: "ns/lq", shown: []string{"one"}, at: t0.Add(time.Second), want: gpus(2)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := assumed()
			shown := func(uid types.UID) bool { return slices.Contains(tc.shown, string(uid)) }
			got := a.podSets(tc.cluster, tc.queue, types.UID(tc.except), tc.at, shown)
			sortPodSets := cmpopts.SortSlices(func(x, y placement.PodSet) bool { return x.Count < y.Count })
			if diff := cmp.Diff(tc.want, got, sortPodSets, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("podSets() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A copy Courier deleted is no demand, whether a snapshot showed it or not.
func TestAssumedCopyDeletedIsForgotten(t *testing.T) {
	a := newAssumedCopies()
	ps := []placement.PodSet{{Name: "main", Count: 1, Requests: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1000}}}
	a.add("w1", "loser", "ns/lq", ps, t0)
	a.add("w2", "loser", "ns/lq", ps, t0)
	a.forget("w1", "loser")
	if got := a.podSets("w1", "ns/lq", "", t0, nil); len(got) != 0 {
		t.Errorf("on the worker it was deleted from: podSets() = %v, want none", got)
	}
	if got := a.podSets("w2", "ns/lq", "", t0, nil); len(got) != 1 {
		t.Errorf("on another worker: podSets() = %v, want the copy", got)
	}
}

// A copy the snapshot showed once is its from then on: deleted soon after,
// as a losing nomination is, it must not come back as assumed demand.
func TestAssumedCopyShownIsForgotten(t *testing.T) {
	a := newAssumedCopies()
	ps := []placement.PodSet{{Name: "main", Count: 1, Requests: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1000}}}
	a.add("w1", "loser", "ns/lq", ps, t0)
	if got := a.podSets("w1", "ns/lq", "", t0, func(types.UID) bool { return false }); len(got) != 1 {
		t.Fatalf("before the snapshot shows it: podSets() = %v, want the copy", got)
	}
	a.podSets("w1", "ns/lq", "", t0.Add(time.Second), func(uid types.UID) bool { return uid == "loser" })
	if got := a.podSets("w1", "ns/lq", "", t0.Add(2*time.Second), func(types.UID) bool { return false }); len(got) != 0 {
		t.Errorf("after the snapshot showed it and it went: podSets() = %v, want none", got)
	}
}
