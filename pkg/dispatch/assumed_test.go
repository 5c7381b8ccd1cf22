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
	a := newAssumedCopies()
	a.add("w1", "one", "ns/lq", gpus(1), t0)
	a.add("w1", "two", "ns/lq", gpus(2), t0.Add(time.Second))
	a.add("w1", "other-queue", "ns/other", gpus(4), t0.Add(time.Second))
	a.add("w2", "three", "ns/lq", gpus(8), t0.Add(time.Second))
	cases := map[string]struct {
		cluster, queue string
		except         string
		at             time.Time
		counted        []string
		want           []placement.PodSet
	}{
		"every recent copy to the same queue on that worker": {cluster: "w1", queue: "ns/lq", at: t0.Add(time.Second), want: append(gpus(1), gpus(2)...)},
		"not the workload's own copy":                        {cluster: "w1", queue: "ns/lq", except: "two", at: t0.Add(time.Second), want: gpus(1)},
		"a copy older than assumedTTL is in the snapshots":   {cluster: "w1", queue: "ns/lq", at: t0.Add(assumedTTL + time.Millisecond), want: gpus(2)},
		"another worker's copies are its own":                {cluster: "w2", queue: "ns/lq", at: t0.Add(time.Second), want: gpus(8)},
		"nothing assumed on a worker":                        {cluster: "w3", queue: "ns/lq", at: t0},
		"not a copy the snapshot counts already":             {cluster: "w1", queue: "ns/lq", counted: []string{"one"}, at: t0.Add(time.Second), want: gpus(2)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			counted := func(uid types.UID) bool { return slices.Contains(tc.counted, string(uid)) }
			got := a.podSets(tc.cluster, tc.queue, types.UID(tc.except), tc.at, counted)
			sortPodSets := cmpopts.SortSlices(func(x, y placement.PodSet) bool { return x.Count < y.Count })
			if diff := cmp.Diff(tc.want, got, sortPodSets, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("podSets() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
