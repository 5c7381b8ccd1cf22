package benchstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestDescribeSteps(t *testing.T) {
	cases := map[string]struct {
		phase PhaseResult
		want  string
	}{
		"each step from quota reserved, in the order the job takes them": {
			phase: PhaseResult{
				QuotaToWorkerQuota: benchreport.Percentiles{P50: 0.07, P95: 0.21},
				QuotaToJobOnWorker: benchreport.Percentiles{P50: 0.16, P95: 0.34},
				QuotaToReady:       benchreport.Percentiles{P50: 0.25, P95: 0.44},
			},
			want: "worker's quota 0.07 / 0.21, job on a worker 0.16 / 0.34, check Ready 0.25 / 0.44",
		},
		"results from before the steps were measured": {
			phase: PhaseResult{QuotaToReady: benchreport.Percentiles{P50: 0.25, P95: 0.44}},
			want:  "not measured",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, describeSteps(tc.phase)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}
