package benchstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeftCountsString(t *testing.T) {
	cases := map[string]struct {
		left leftCounts
		want string
	}{
		"nothing listed": {left: leftCounts{}},
		"nothing left":   {left: leftCounts{"worker-1": {"Workload": 0, "Pod": 0}, "worker-2": {"Workload": 0}}},
		"what is left, worker by worker, kind by kind": {
			left: leftCounts{
				"worker-2": {"Workload": 481, "TrainJob": 0, "Pod": 12},
				"worker-1": {"Workload": 0, "JobSet": 3},
			},
			want: "worker-1: 3 JobSets; worker-2: 12 Pods, 481 Workloads",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.left.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
		})
	}
}
