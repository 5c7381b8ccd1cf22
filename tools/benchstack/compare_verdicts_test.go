package benchstack

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

// summary is one system's medians of the figures the targets read.
func summary(system string, throughput, completeP95, managerCPU, courierWrites, workerAll, gets, writes, cpu float64, broken int) SystemSummary {
	st := func(v float64) Stat { return Stat{Median: v, Min: v, Max: v, N: 3} }
	return SystemSummary{System: system, Label: Systems[system].Label, Repeats: 3, Broken: broken, Figures: map[string]Stat{
		"throughput": st(throughput), "submitToComplete.p95": st(completeP95), "manager.cpu": st(managerCPU),
		"courierToManager.writes": st(courierWrites), "toWorkers.all": st(workerAll), "toWorkers.gets": st(gets),
		"toWorkers.writes": st(writes), "dispatcher.cpu": st(cpu), "submitToReady.p50": st(0.2), "submitToReady.p95": st(0.4),
		"machine.busy": st(60),
	}}
}

func TestCompareVerdicts(t *testing.T) {
	// courierAlone are the verdicts on Courier's rate-1 figures when no
	// MultiKueue ran beside it.
	courierAlone := []string{
		"SKIP at the largest burst: Courier's throughput ≥ 1.5× the better MultiKueue's",
		"SKIP at the largest burst: Courier's p95 submission → complete ≤ 0.7× the better MultiKueue's",
		"SKIP rate-1: manager side CPU per job ≤ 0.6× the better MultiKueue's",
		"PASS Courier's writes to the manager ≤ 6 per job",
		"SKIP rate-1: Courier's requests and watch events to the workers fewer than the better MultiKueue's",
		"PASS Courier ≤ 4 gets and writes to the workers per job (issue 12)",
		"PASS The Courier process ≤ 10 ms CPU per job (issue 12)",
		"PASS Courier (defaults, BestFit): no invariant broken",
	}
	statuses := func(vs []benchreport.Verdict) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Status+" "+v.Target)
		}
		return out
	}
	cases := map[string]struct {
		loads []LoadSummary
		want  []string
	}{
		"Courier ahead on every target, each against the better MultiKueue of that figure": {
			loads: []LoadSummary{
				{Load: "burst-1000", Jobs: 1000, Systems: []SystemSummary{
					summary(SystemCourier, 3.0, 100, 50, 5, 20, 0, 3, 8, 0),
					// The released MultiKueue has the better p95, the faster
					// build the better throughput.
					summary(SystemMultiKueue, 1.2, 150, 100, 0, 40, 20, 6, 100, 0),
					summary(SystemMultiKueueQPS, 1.9, 300, 90, 0, 60, 30, 6, 110, 0),
				}},
				{Load: "burst-500", Jobs: 500, Systems: []SystemSummary{
					summary(SystemCourier, 3.0, 50, 50, 5, 20, 0, 3, 8, 0),
					summary(SystemMultiKueueQPS, 2.0, 100, 90, 0, 60, 30, 6, 110, 0),
				}},
				{Load: "rate-1", Jobs: 200, Rate: 1, Systems: []SystemSummary{
					summary(SystemCourier, 1, 2, 50, 5, 20, 0, 3, 8, 0),
					summary(SystemMultiKueue, 1, 2, 100, 0, 40, 20, 6, 100, 0),
				}},
				{Load: "batch-jobs-100", Jobs: 100, Batch: true, Systems: []SystemSummary{summary(SystemCourier, 5, 5, 70, 5, 20, 1, 3, 8, 0)}},
			},
			want: []string{
				"PASS burst-1000: Courier's throughput ≥ 1.5× the better MultiKueue's",
				"PASS burst-1000: Courier's p95 submission → complete ≤ 0.7× the better MultiKueue's",
				"PASS burst-1000: manager side CPU per job ≤ 0.6× the better MultiKueue's",
				"PASS burst-500: manager side CPU per job ≤ 0.6× the better MultiKueue's",
				"PASS rate-1: manager side CPU per job ≤ 0.6× the better MultiKueue's",
				"PASS Courier's writes to the manager ≤ 6 per job",
				"PASS burst-1000: Courier's requests and watch events to the workers fewer than the better MultiKueue's",
				"PASS burst-500: Courier's requests and watch events to the workers fewer than the better MultiKueue's",
				"PASS rate-1: Courier's requests and watch events to the workers fewer than the better MultiKueue's",
				"PASS Courier ≤ 4 gets and writes to the workers per job (issue 12)",
				"PASS The Courier process ≤ 10 ms CPU per job (issue 12)",
				"PASS Courier (defaults, BestFit): no invariant broken",
				"PASS MultiKueue v0.19.1: no invariant broken",
				"PASS MultiKueue v0.19.1 + worker clients at 1,000 QPS: no invariant broken",
			},
		},
		"misses on each target fail, and so does a broken invariant": {
			loads: []LoadSummary{
				{Load: "burst-30", Jobs: 30, Systems: []SystemSummary{
					summary(SystemCourier, 1.4, 80, 70, 6.5, 40, 1.5, 3, 25, 1),
					summary(SystemMultiKueue, 1.0, 100, 100, 0, 40, 20, 6, 100, 0),
				}},
			},
			want: []string{
				"FAIL burst-30: Courier's throughput ≥ 1.5× the better MultiKueue's",
				"FAIL burst-30: Courier's p95 submission → complete ≤ 0.7× the better MultiKueue's",
				"FAIL burst-30: manager side CPU per job ≤ 0.6× the better MultiKueue's",
				"FAIL Courier's writes to the manager ≤ 6 per job",
				"FAIL burst-30: Courier's requests and watch events to the workers fewer than the better MultiKueue's",
				"FAIL Courier ≤ 4 gets and writes to the workers per job (issue 12)",
				"FAIL The Courier process ≤ 10 ms CPU per job (issue 12)",
				"FAIL Courier (defaults, BestFit): no invariant broken",
				"PASS MultiKueue v0.19.1: no invariant broken",
			},
		},
		"the build with every client at 1,000 QPS is a MultiKueue Courier is judged against": {
			loads: []LoadSummary{
				{Load: "burst-500", Jobs: 500, Systems: []SystemSummary{
					summary(SystemCourier, 3.0, 50, 40, 5, 20, 0, 3, 8, 0),
					summary(SystemMultiKueueQPS, 1.9, 300, 90, 0, 60, 30, 6, 110, 0),
					// Faster: 3.0 is 1.58× the other build's throughput, 1.43× this one's.
					summary(SystemMultiKueueAllQPS, 2.1, 140, 80, 0, 60, 30, 6, 110, 1),
				}},
			},
			want: []string{
				"FAIL burst-500: Courier's throughput ≥ 1.5× the better MultiKueue's",
				"PASS burst-500: Courier's p95 submission → complete ≤ 0.7× the better MultiKueue's",
				"PASS burst-500: manager side CPU per job ≤ 0.6× the better MultiKueue's",
				"PASS Courier's writes to the manager ≤ 6 per job",
				"PASS burst-500: Courier's requests and watch events to the workers fewer than the better MultiKueue's",
				"PASS Courier ≤ 4 gets and writes to the workers per job (issue 12)",
				"PASS The Courier process ≤ 10 ms CPU per job (issue 12)",
				"PASS Courier (defaults, BestFit): no invariant broken",
				"PASS MultiKueue v0.19.1 + worker clients at 1,000 QPS: no invariant broken",
				"FAIL MultiKueue v0.19.1 + worker and manager clients at 1,000 QPS: no invariant broken",
			},
		},
		"Courier beside its baseline, which is not judged": {
			loads: []LoadSummary{{Load: "rate-1", Jobs: 20, Rate: 1, Systems: []SystemSummary{
				summary(SystemCourier, 1, 1, 50, 5, 20, 0, 3, 8, 0),
				summary(SystemBaseline, 1, 1, 50, 7, 20, 5, 9, 80, 1),
			}}},
			want: append(slices.Clone(courierAlone), "FAIL Courier, the baseline build (defaults, BestFit): no invariant broken"),
		},
		"Courier alone": {
			loads: []LoadSummary{{Load: "rate-1", Jobs: 20, Rate: 1, Systems: []SystemSummary{summary(SystemCourier, 1, 1, 50, 5, 20, 0, 3, 8, 0)}}},
			want:  courierAlone,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, statuses(compareVerdicts(tc.loads))); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersusMultiKueueDetail(t *testing.T) {
	l := LoadSummary{Load: "burst-1000", Jobs: 1000, Systems: []SystemSummary{
		summary(SystemCourier, 3.0, 100, 50, 5, 20, 0, 3, 8, 0),
		summary(SystemMultiKueue, 1.2, 150, 100, 0, 40, 20, 6, 100, 0),
		summary(SystemMultiKueueQPS, 1.9, 300, 90, 0, 60, 30, 6, 110, 0),
	}}
	got := []benchreport.Verdict{
		versusMultiKueue(l, "throughput", true, 1.5, "throughput", "%.2f/s"),
		versusMultiKueue(l, "submitToComplete.p95", false, 0.7, "p95", "%.1f s"),
	}
	want := []benchreport.Verdict{
		{Status: "PASS", Target: "throughput", Detail: "Courier 3.00/s, MultiKueue v0.19.1 + worker clients at 1,000 QPS 1.90/s (medians of 3 and 3)"},
		{Status: "PASS", Target: "p95", Detail: "Courier 100.0 s, MultiKueue v0.19.1 150.0 s (medians of 3 and 3)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
}

func TestBelowSaturation(t *testing.T) {
	loads := []LoadSummary{
		{Load: "burst-500", Jobs: 500, Systems: []SystemSummary{summary(SystemCourier, 1, 1, 1, 1, 1, 1, 1, 1, 0)}},
		{Load: "rate-1", Jobs: 200, Rate: 1, Systems: []SystemSummary{
			summary(SystemCourier, 1, 1, 1, 1, 1, 1, 1, 1, 0),
			summary(SystemMultiKueue, 1, 1, 1, 1, 1, 1, 1, 1, 0),
		}},
	}
	want := []string{"rate-1: submission → check Ready p50 / p95, medians: Courier (defaults, BestFit) 0.20 / 0.40 s (machine 60% busy); MultiKueue v0.19.1 0.20 / 0.40 s (machine 60% busy)"}
	if diff := cmp.Diff(want, belowSaturation(loads)); diff != "" {
		t.Errorf("below saturation (-want +got):\n%s", diff)
	}
}

func TestManagerCPUAgainstTheFloor(t *testing.T) {
	load := func(floorCPU float64) LoadSummary {
		return LoadSummary{Load: "rate-1", Jobs: 100, Rate: 1, Systems: []SystemSummary{
			summary(SystemCourier, 1, 2, 630, 6, 20, 0, 3, 40, 0),
			summary(SystemMultiKueue, 1, 2, 660, 0, 40, 20, 6, 180, 0),
			summary(SystemFloor, 1, 1, floorCPU, 0, 0, 0, 0, 0, 0),
		}}
	}
	detail := func(l LoadSummary) string {
		for _, v := range compareVerdicts([]LoadSummary{l}) {
			if v.Target == "rate-1: manager side CPU per job ≤ 0.6× the better MultiKueue's" {
				return v.Detail
			}
		}
		return "no verdict"
	}
	got := []string{detail(load(550)), detail(load(300)), detail(load(700)), detail(load(640))}
	want := []string{
		"Courier 630.0 ms, MultiKueue v0.19.1 660.0 ms (medians of 3 and 3); with no dispatcher (the floor) 550.0 ms, so the target, 396.0 ms, is below it: no dispatcher can meet it" +
			"; above the floor, medians less its median, Courier adds 80.0 ms and MultiKueue v0.19.1 110.0 ms (0.73×)",
		"Courier 630.0 ms, MultiKueue v0.19.1 660.0 ms (medians of 3 and 3); with no dispatcher (the floor) 300.0 ms, so the target, 396.0 ms, is above it" +
			"; above the floor, medians less its median, Courier adds 330.0 ms and MultiKueue v0.19.1 360.0 ms (0.92×)",
		// A floor above both, as noise can make it where the dispatchers
		// add little: no ratio of two differences that are not costs.
		"Courier 630.0 ms, MultiKueue v0.19.1 660.0 ms (medians of 3 and 3); with no dispatcher (the floor) 700.0 ms, so the target, 396.0 ms, is below it: no dispatcher can meet it" +
			"; above the floor, medians less its median, Courier adds -70.0 ms and MultiKueue v0.19.1 -40.0 ms",
		// Courier below the floor and MultiKueue above it: no negative ratio.
		"Courier 630.0 ms, MultiKueue v0.19.1 660.0 ms (medians of 3 and 3); with no dispatcher (the floor) 640.0 ms, so the target, 396.0 ms, is below it: no dispatcher can meet it" +
			"; above the floor, medians less its median, Courier adds -10.0 ms and MultiKueue v0.19.1 20.0 ms",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the manager side's verdict (-want +got):\n%s", diff)
	}
}

func TestThroughputAgainstTheFreeDispatcher(t *testing.T) {
	load := func(free float64) LoadSummary {
		return LoadSummary{Load: "burst-1000", Jobs: 1000, Systems: []SystemSummary{
			summary(SystemCourier, 3, 250, 200, 5, 16, 0, 3, 16, 0),
			summary(SystemMultiKueueQPS, 2.2, 400, 290, 0, 42, 20, 6, 180, 0),
			summary(SystemFree, free, 200, 190, 0, 0, 0, 3, 0, 0),
		}}
	}
	detail := func(l LoadSummary) string {
		for _, v := range compareVerdicts([]LoadSummary{l}) {
			if v.Target == "burst-1000: Courier's throughput ≥ 1.5× the better MultiKueue's" {
				return v.Detail
			}
		}
		return "no verdict"
	}
	mk := Systems[SystemMultiKueueQPS].Label
	got := []string{detail(load(3.2)), detail(load(4))}
	want := []string{
		"Courier 3.00/s, " + mk + " 2.20/s (medians of 3 and 3); the harness as dispatcher, at no cost of its own, 3.20/s, so the target, 3.30/s, is above it: a dispatcher that cost nothing did not reach it",
		"Courier 3.00/s, " + mk + " 2.20/s (medians of 3 and 3); the harness as dispatcher, at no cost of its own, 4.00/s, so the target, 3.30/s, is below it",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the throughput verdict (-want +got):\n%s", diff)
	}
}
