package benchstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestCompareVerdicts(t *testing.T) {
	phase := func(system, load string, jobs int, rate, p95, throughput, requests, cpuMs float64, inv Invariants) PhaseResult {
		p := PhaseResult{System: system, SystemLabel: Systems[system].Label, Load: load, Jobs: jobs, Rate: rate, Throughput: throughput,
			QuotaToReady: benchreport.Percentiles{P95: p95}, Invariants: inv, Dispatcher: DispatcherCost{CPUMsPerWorkload: cpuMs}}
		p.Requests.PerWorkload.ForWorkloads = requests
		return p
	}
	statuses := func(vs []benchreport.Verdict) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Status+" "+v.Target)
		}
		return out
	}
	cases := map[string]struct {
		phases []PhaseResult
		want   []string
	}{
		"Courier ahead on every target": {
			phases: []PhaseResult{
				phase(SystemCourier, "burst-1000", 1000, 0, 5, 4.2, 3, 8, Invariants{}),
				phase(SystemMultiKueue, "burst-1000", 1000, 0, 74, 1.25, 23, 20, Invariants{}),
				phase(SystemMultiKueueQPS, "burst-1000", 1000, 0, 26, 2.2, 39, 30, Invariants{}),
				phase(SystemCourier, "burst-500", 500, 0, 5, 4, 3, 8, Invariants{}),
				phase(SystemMultiKueueQPS, "burst-500", 500, 0, 5, 4, 3, 8, Invariants{}),
				phase(SystemCourier, "rate-1", 200, 1, 1, 1, 3, 8, Invariants{}),
				phase(SystemMultiKueue, "rate-1", 200, 1, 10, 1, 23, 8, Invariants{}),
				phase(SystemMultiKueueQPS, "rate-1", 200, 1, 6, 1, 23, 8, Invariants{}),
				func() PhaseResult {
					p := phase(SystemCourier, "batch-jobs-2000", 2000, 0, 5, 0.1, 3, 8, Invariants{})
					p.Batch = true
					return p
				}(),
			},
			want: []string{
				"PASS rate-1: Courier's p95 quota reserved → check Ready ≤ 1/5 of the faster MultiKueue's",
				"PASS burst-1000: Courier's throughput ≥ 1.5× the faster MultiKueue's",
				"PASS Courier ≤ 4 requests (gets and writes) to the workers per workload",
				"PASS Courier ≤ 10 ms CPU per workload",
				"PASS Courier (defaults, BestFit): no invariant broken",
				"PASS MultiKueue v0.19.1: no invariant broken",
				"PASS MultiKueue v0.19.1 + worker QPS 1000 (kueue#15206): no invariant broken",
			},
		},
		"the faster MultiKueue is the one compared, and broken invariants fail": {
			phases: []PhaseResult{
				phase(SystemCourier, "burst-40", 40, 0, 5, 3, 5, 12, Invariants{OnTwoWorkers: []string{"j"}}),
				phase(SystemMultiKueue, "burst-40", 40, 0, 20, 1, 23, 20, Invariants{}),
				phase(SystemMultiKueueQPS, "burst-40", 40, 0, 20, 2.5, 39, 20, Invariants{}),
			},
			want: []string{
				"SKIP at a steady rate: Courier's p95 ≤ 1/5 of the faster MultiKueue's",
				"FAIL burst-40: Courier's throughput ≥ 1.5× the faster MultiKueue's",
				"FAIL Courier ≤ 4 requests (gets and writes) to the workers per workload",
				"FAIL Courier ≤ 10 ms CPU per workload",
				"FAIL Courier (defaults, BestFit): no invariant broken",
				"PASS MultiKueue v0.19.1: no invariant broken",
				"PASS MultiKueue v0.19.1 + worker QPS 1000 (kueue#15206): no invariant broken",
			},
		},
		"Courier alone": {
			phases: []PhaseResult{phase(SystemCourier, "rate-1", 20, 1, 1, 1, 3, 5, Invariants{})},
			want: []string{
				"SKIP rate-1: Courier's p95 quota reserved → check Ready ≤ 1/5 of the faster MultiKueue's",
				"SKIP at the largest burst: Courier's throughput ≥ 1.5× the faster MultiKueue's",
				"PASS Courier ≤ 4 requests (gets and writes) to the workers per workload",
				"PASS Courier ≤ 10 ms CPU per workload",
				"PASS Courier (defaults, BestFit): no invariant broken",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, statuses(compareVerdicts(tc.phases))); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvariantVerdictsTellUnfinishedFromBroken(t *testing.T) {
	cases := map[string]struct {
		phase PhaseResult
		want  benchreport.Verdict
	}{
		"jobs not finished in time are named apart": {
			phase: PhaseResult{System: SystemMultiKueue, Load: "burst-1000", Jobs: 1000, Unfinished: []string{"a", "b"}},
			want: benchreport.Verdict{Status: "PASS", Target: "MultiKueue v0.19.1: no invariant broken",
				Detail: "none broken (of the jobs that finished; burst-1000: 2 not Finished within the time limit)"},
		},
		"a finished job without its final status breaks one": {
			phase: PhaseResult{System: SystemMultiKueue, Load: "burst-1000", Jobs: 1000, Unfinished: []string{"a"},
				Invariants: Invariants{FinalStatusMissing: []string{"b"}}},
			want: benchreport.Verdict{Status: "FAIL", Target: "MultiKueue v0.19.1: no invariant broken",
				Detail: "burst-1000: 0 finished never Ready, 1 without final status, 0 on two workers (of the jobs that finished; burst-1000: 1 not Finished within the time limit)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			verdicts := compareVerdicts([]PhaseResult{tc.phase})
			if diff := cmp.Diff(tc.want, verdicts[len(verdicts)-1]); diff != "" {
				t.Errorf("invariants verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// The target holds below saturation; the verdict says how busy the machine
// was, so that a rate at saturation is read as such.
func TestLatencyVerdictSaysHowBusyTheMachineWas(t *testing.T) {
	courierPhase := PhaseResult{System: SystemCourier, Load: "rate-0.5", Jobs: 60, Rate: 0.5, MachineBusy: 0.54,
		QuotaToReady: benchreport.Percentiles{P95: 0.24}}
	mk := PhaseResult{System: SystemMultiKueueQPS, SystemLabel: Systems[SystemMultiKueueQPS].Label, Load: "rate-0.5", Jobs: 60, Rate: 0.5,
		MachineBusy: 0.5, QuotaToReady: benchreport.Percentiles{P95: 0.24}}
	want := benchreport.Verdict{Status: "FAIL", Target: "rate-0.5: Courier's p95 quota reserved → check Ready ≤ 1/5 of the faster MultiKueue's",
		Detail: "Courier 0.24 s, MultiKueue v0.19.1 + worker QPS 1000 (kueue#15206) 0.24 s; the machine 54% and 50% busy"}
	if diff := cmp.Diff(want, compareVerdicts([]PhaseResult{courierPhase, mk})[0]); diff != "" {
		t.Errorf("latency verdict (-want +got):\n%s", diff)
	}
}
