package benchscale

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestEvaluate(t *testing.T) {
	run := func(workers, n int, cpuMillis, rssPerPendingKiB float64, peakMiB uint64, throughput float64) *Result {
		r := &Result{Workers: workers, Workloads: n}
		r.Backlog.Cost.CPUMillisPerDispatch = cpuMillis
		r.Backlog.Cost.PeakRSSBytes = peakMiB << 20
		r.Backlog.RSSPerPendingBytes = rssPerPendingKiB * 1024
		r.Backlog.Throughput = throughput
		return r
	}
	statuses := func(vs []benchreport.Verdict) map[string]string {
		out := map[string]string{}
		for _, v := range vs {
			out[v.Target] = v.Status
		}
		return out
	}
	cases := map[string]struct {
		runs []*Result
		want map[string]string
	}{
		"one small run: growth and peak RSS have nothing to compare": {
			runs: []*Result{run(2, 1000, 5, 50, 90, 120)},
			want: map[string]string{
				"CPU ≤ 10 ms per dispatch":                                         "PASS",
				"≥ 100 workloads/s on 2 workers":                                   "PASS",
				"peak RSS ≤ 300.0 MiB at 5000 pending":                             "SKIP",
				"CPU per dispatch and RSS per pending workload grow < 1.5x with N": "SKIP",
				"CPU per dispatch and RSS per pending workload grow < 1.5x with W": "SKIP",
			},
		},
		"CPU grows 2x with N, memory holds; too slow; too big": {
			runs: []*Result{run(2, 1000, 4, 50, 90, 30), run(2, 5000, 8, 45, 310, 30)},
			want: map[string]string{
				"CPU ≤ 10 ms per dispatch":                                          "PASS",
				"≥ 100 workloads/s on 2 workers":                                    "FAIL",
				"peak RSS ≤ 300.0 MiB at 5000 pending":                              "FAIL",
				"CPU per dispatch grows < 1.5x from N=1000 to N=5000 (W=2)":         "FAIL",
				"RSS per pending workload grows < 1.5x from N=1000 to N=5000 (W=2)": "PASS",
				"CPU per dispatch and RSS per pending workload grow < 1.5x with W":  "SKIP",
			},
		},
		"a run that measured no CPU is no base for a ratio": {
			runs: []*Result{run(2, 1000, 0, 50, 90, 120), run(10, 1000, 5, 60, 100, 120)},
			want: map[string]string{
				"CPU ≤ 10 ms per dispatch":                                         "PASS",
				"≥ 100 workloads/s on 2 workers":                                   "PASS",
				"peak RSS ≤ 300.0 MiB at 5000 pending":                             "SKIP",
				"CPU per dispatch grows < 1.5x from W=2 to W=10 (N=1000)":          "SKIP",
				"RSS per pending workload grows < 1.5x from W=2 to W=10 (N=1000)":  "PASS",
				"CPU per dispatch and RSS per pending workload grow < 1.5x with N": "SKIP",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, statuses(evaluate(tc.runs))); diff != "" {
				t.Errorf("verdicts by target (-want +got):\n%s", diff)
			}
		})
	}
}
