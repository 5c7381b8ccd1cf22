package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestFitsNow(t *testing.T) {
	twoCPUs := Workload{PodSets: []PodSet{{Name: "main", Count: 2, Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1000}}}}
	cpus := func(nominal, usage, pending int64) Capacity {
		return Capacity{Known: true, ClusterQueue: "cq", Flavors: []Flavor{{Name: "default",
			Resources: map[corev1.ResourceName]Quota{corev1.ResourceCPU: {Nominal: nominal, Usage: usage, Pending: pending}}}}}
	}
	cases := map[string]struct {
		capacity Capacity
		wantFits bool
		wantWhy  string
	}{
		"room now":                {capacity: cpus(4000, 1000, 0), wantFits: true},
		"unknown capacity":        {capacity: Capacity{}, wantFits: true},
		"used up":                 {capacity: cpus(4000, 3000, 0), wantWhy: "ClusterQueue cq: cpu: needs 2, has free 1"},
		"taken by waiting copies": {capacity: cpus(4000, 0, 3000), wantWhy: "ClusterQueue cq: cpu: needs 2, has free 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fits, why := FitsNow(twoCPUs, tc.capacity)
			if fits != tc.wantFits {
				t.Errorf("FitsNow = %v, want %v", fits, tc.wantFits)
			}
			if diff := cmp.Diff(tc.wantWhy, why); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
		})
	}
}
