package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestDefaultScore(t *testing.T) {
	cases := map[string]struct {
		c    Capacity
		d    demand
		want float64
	}{
		"one resource: (free − demand) / limit": {
			c: queue(gpus("f", 8, 2)), d: demand{gpu: 2000}, want: 0.5,
		},
		"summed over flavors, borrowable and pending included": {
			c: queue(gpus("x", 4, 4), Flavor{Name: "y", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 2000, Borrowable: 2000, Pending: 1000}}}),
			d: demand{gpu: 1000}, want: 0.25, // free 0 + 3, limit 4 + 4
		},
		"the scarcest resource decides": {
			c:    queue(flavor("f", map[corev1.ResourceName]int64{cpu: 10000, gpu: 8000})),
			d:    demand{cpu: 1000, gpu: 6000},
			want: 0.25, // cpu 0.9, gpu 0.25
		},
		"resources the workload does not request do not count": {
			c: queue(flavor("f", map[corev1.ResourceName]int64{cpu: 1000, gpu: 8000})), d: demand{gpu: 4000}, want: 0.5,
		},
		"no room: negative": {
			c: queue(gpus("f", 4, 4)), d: demand{gpu: 2000}, want: -0.5,
		},
		"a resource without quota: -1": {
			c: queue(gpus("f", 4, 0)), d: demand{gpu: 1000, cpu: 1000}, want: -1,
		},
		"a workload that requests nothing: 0": {
			c: queue(gpus("f", 4, 0)), d: demand{}, want: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, defaultScore(tc.c, tc.d)); diff != "" {
				t.Errorf("defaultScore() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
