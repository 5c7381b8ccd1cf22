package placement

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
)

const cpu, memory = corev1.ResourceCPU, corev1.ResourceMemory

// flavor is a flavor whose quotas are given as nominal only.
func flavor(name string, nominal map[corev1.ResourceName]int64) Flavor {
	f := Flavor{Name: name, Resources: map[corev1.ResourceName]Quota{}}
	for r, n := range nominal {
		f.Resources[r] = Quota{Nominal: n}
	}
	return f
}

func podSet(name string, count int32, requests map[corev1.ResourceName]int64) PodSet {
	return PodSet{Name: name, Count: count, Requests: requests}
}

func TestFits(t *testing.T) {
	const gi = 1 << 30 * 1000 // one Gi in milli-bytes
	cases := map[string]struct {
		c          Capacity
		w          Workload
		m          mode
		wantReason string // empty: fits
	}{
		"one flavor with room": {
			c: queue(gpus("f", 8, 6)), w: twoGPUs, m: now,
		},
		"room ever, not now: the free quota named": {
			c: queue(gpus("f", 8, 7)), w: twoGPUs, m: now,
			wantReason: "ClusterQueue cq: nvidia.com/gpu: needs 2, has free 1",
		},
		"room ever, not now, counted ever": {
			c: queue(gpus("f", 8, 7)), w: twoGPUs, m: ever,
		},
		"pending demand takes room now": {
			c: queue(Flavor{Name: "f", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 4000, Pending: 3000}}}), w: twoGPUs, m: now,
			wantReason: "ClusterQueue cq: nvidia.com/gpu: needs 2, has free 1",
		},
		"borrowable quota counts toward the limit": {
			c: queue(Flavor{Name: "f", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 1000, Borrowable: 1000}}}), w: twoGPUs, m: ever,
		},
		"over-committed: free shown as 0": {
			c: queue(gpus("f", 4, 6)), w: twoGPUs, m: now,
			wantReason: "ClusterQueue cq: nvidia.com/gpu: needs 2, has free 0",
		},
		"gang: a pod set goes to one flavor, never split": {
			c: queue(gpus("x", 4, 0), gpus("y", 4, 0)), w: Workload{PodSets: []PodSet{pods("main", 8, 1)}}, m: ever,
			wantReason: "ClusterQueue cq: nvidia.com/gpu: needs 8, can ever have 4 in one flavor",
		},
		"pod sets may go to different flavors": {
			c: queue(gpus("x", 4, 0), gpus("y", 4, 0)), w: Workload{PodSets: []PodSet{pods("a", 4, 1), pods("b", 4, 1)}}, m: ever,
		},
		"first fit in order, as Kueue: the first pod set takes the big flavor the second needed": {
			c: queue(gpus("x", 8, 0), gpus("y", 4, 0)), w: Workload{PodSets: []PodSet{pods("a", 4, 1), pods("b", 8, 1)}}, m: ever,
			wantReason: "ClusterQueue cq: pod set b: nvidia.com/gpu: needs 8, can ever have 4 in one flavor",
		},
		"a flavor without a requested resource cannot take the pod set": {
			c: queue(flavor("cpu-only", map[corev1.ResourceName]int64{cpu: 64000}), flavor("gpu", map[corev1.ResourceName]int64{cpu: 8000, gpu: 8000})),
			w: Workload{PodSets: []PodSet{podSet("main", 2, map[corev1.ResourceName]int64{cpu: 4000, gpu: 1000})}}, m: ever,
		},
		"a resource no flavor has": {
			c:          queue(gpus("f", 8, 0)),
			w:          Workload{PodSets: []PodSet{podSet("main", 1, map[corev1.ResourceName]int64{"example.com/fpga": 1000})}},
			m:          ever,
			wantReason: "ClusterQueue cq: example.com/fpga: needs 1, no flavor has it",
		},
		"each resource has room in some flavor, never both in one": {
			c: queue(flavor("x", map[corev1.ResourceName]int64{cpu: 8000, gpu: 1000}), flavor("y", map[corev1.ResourceName]int64{cpu: 1000, gpu: 8000})),
			w: Workload{PodSets: []PodSet{podSet("main", 1, map[corev1.ResourceName]int64{cpu: 4000, gpu: 4000})}}, m: ever,
			wantReason: "ClusterQueue cq: no one flavor has room for all of its requests",
		},
		"zero requests need no quota": {
			c: queue(flavor("f", map[corev1.ResourceName]int64{cpu: 1000})),
			w: Workload{PodSets: []PodSet{podSet("main", 1, map[corev1.ResourceName]int64{cpu: 1000, gpu: 0, memory: -5})}}, m: ever,
		},
		"a pod set of no pods needs nothing": {
			c: queue(), w: Workload{PodSets: []PodSet{pods("main", 0, 1), pods("neg", -3, 1)}}, m: ever,
		},
		"human units: cores and bytes": {
			c: queue(flavor("f", map[corev1.ResourceName]int64{cpu: 1000, memory: 8 * gi})),
			w: Workload{PodSets: []PodSet{podSet("main", 2, map[corev1.ResourceName]int64{cpu: 250, memory: 8 * gi})}}, m: ever,
			wantReason: "ClusterQueue cq: memory: needs 16Gi, can ever have 8Gi",
		},
		"human units: cores as decimals": {
			c: queue(flavor("f", map[corev1.ResourceName]int64{cpu: 1000})),
			w: Workload{PodSets: []PodSet{podSet("main", 3, map[corev1.ResourceName]int64{cpu: 500})}}, m: ever,
			wantReason: "ClusterQueue cq: cpu: needs 1.5, can ever have 1",
		},
		"no ClusterQueue name: no prefix": {
			c: Capacity{Known: true, Flavors: []Flavor{gpus("f", 1, 0)}}, w: twoGPUs, m: ever,
			wantReason: "nvidia.com/gpu: needs 2, can ever have 1",
		},
		"absurd numbers saturate, never wrap": {
			c: queue(Flavor{Name: "f", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: math.MaxInt64, Borrowable: math.MaxInt64, Usage: math.MinInt64}}}),
			w: Workload{PodSets: []PodSet{podSet("main", math.MaxInt32, map[corev1.ResourceName]int64{gpu: math.MaxInt64})}}, m: now,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ok, reason := newGang(tc.w).fits(tc.c, tc.m)
			if ok != (tc.wantReason == "") || reason != tc.wantReason {
				t.Errorf("fits() = %v, %q; want reason %q", ok, reason, tc.wantReason)
			}
		})
	}
}

func TestGangDemand(t *testing.T) {
	w := Workload{PodSets: []PodSet{
		podSet("a", 2, map[corev1.ResourceName]int64{cpu: 500, gpu: 1000, memory: 0}),
		podSet("b", 3, map[corev1.ResourceName]int64{cpu: 1000, "example.com/neg": -1}),
		podSet("c", -1, map[corev1.ResourceName]int64{cpu: 1000}),
	}}
	want := demand{cpu: 4000, gpu: 2000}
	if diff := cmp.Diff(want, newGang(w).total, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("newGang().total mismatch (-want +got):\n%s", diff)
	}
}

func TestSaturating(t *testing.T) {
	cases := map[string]struct{ got, want int64 }{
		"add":                          {satAdd(1, 2), 3},
		"add over":                     {satAdd(math.MaxInt64, 1), math.MaxInt64},
		"add under":                    {satAdd(math.MinInt64, -1), math.MinInt64},
		"sub":                          {satSub(1, 2), -1},
		"sub MinInt64":                 {satSub(0, math.MinInt64), math.MaxInt64},
		"sub MinInt64 from a negative": {satSub(-1, math.MinInt64), math.MaxInt64},
		"sub under":                    {satSub(math.MinInt64, 1), math.MinInt64},
		"mul":                          {satMul(3, 4), 12},
		"mul over":                     {satMul(math.MaxInt32, math.MaxInt64), math.MaxInt64},
		"mul by zero":                  {satMul(0, math.MaxInt64), 0},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", name, tc.got, tc.want)
		}
	}
}

func TestHasRoomNow(t *testing.T) {
	cases := map[string]struct {
		c    Capacity
		want bool
	}{
		"room now":                      {c: queue(gpus("f", 8, 6)), want: true},
		"room ever, not now":            {c: queue(gpus("f", 8, 7))},
		"pending demand takes the room": {c: queue(Flavor{Name: "f", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 4000, Pending: 3000}}})},
		"unknown capacity offers none":  {c: Capacity{Flavors: []Flavor{gpus("f", 8, 0)}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := HasRoomNow(tc.c, twoGPUs); got != tc.want {
				t.Errorf("HasRoomNow() = %v, want %v", got, tc.want)
			}
		})
	}
}
