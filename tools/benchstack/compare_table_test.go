package benchstack

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestCell(t *testing.T) {
	cases := map[string]struct {
		stat   Stat
		format string
		want   string
	}{
		"the median, then the least and greatest": {Stat{Median: 2.13, Min: 2.01, Max: 2.2, N: 3}, "%.2f", "2.13 (2.01–2.20)"},
		"one repeat has no range":                 {Stat{Median: 5.5, Min: 5.5, Max: 5.5, N: 1}, "%.1f", "5.5"},
		"not measured":                            {Stat{}, "%.1f", "–"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := cell(tc.stat, tc.format); got != tc.want {
				t.Errorf("cell %q, want %q", got, tc.want)
			}
		})
	}
}

// tableComparison is two repeats of burst-100 through Courier and
// MultiKueue.
func tableComparison() *Comparison {
	loads := []Load{{Name: "burst-100", Jobs: 100}}
	phases := []PhaseResult{
		phaseWith(SystemCourier, 0, 2.0, 100, 200),
		phaseWith(SystemMultiKueue, 0, 1.0, 150, 0),
		phaseWith(SystemMultiKueue, 1, 1.2, 140, 0),
		phaseWith(SystemCourier, 1, 2.4, 90, 300),
	}
	for i := range phases {
		phases[i].Started = time.Date(2026, 11, 28, 10, i, 0, 0, time.UTC)
		phases[i].WindowSeconds, phases[i].MachineBusy, phases[i].OutsideStack = 60, 0.9, 0.05
		phases[i].LoadAverage = LoadAverage{Mean: 3.2, Max: 4.5}
		m := phases[i].Sides[sideManager]
		m.Rest = &RestCost{Cores: 0.25, AboveMsPerJob: float64(10 * (i + 1))}
		phases[i].Sides[sideManager] = m
	}
	phases[0].PassesPerWorkload, phases[3].PassesPerWorkload = 9.5, 10.5
	phases[1].Warnings = []string{"a warning"}
	phases[2].Machine = &MachineCheck{RestProbeCPUMs: 104, PhaseProbeCPUMs: 131, PhaseProbeWallMs: 260, PhaseProbeRuns: 4, Steal: 0.012}
	phases[2].AuditRotations = map[string]int{"worker-2": 2, "manager": 1}
	c := &Comparison{
		Command: "courier-bench compare --bursts 100", Started: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC),
		Machine: Machine{CPUs: 2, Model: "AMD EPYC", MemoryGi: 23, Kernel: "6.18.0"}, Versions: map[string]string{"kueue": "kueue-v0.19.1"},
		Loads: loads, Repeats: 2, RestSeconds: 30, Orders: [][]string{{SystemCourier, SystemMultiKueue}, {SystemMultiKueue, SystemCourier}}, Phases: phases,
	}
	c.Summaries = summarizeRepeats(loads, phases)
	c.Verdicts = []benchreport.Verdict{{Status: "PASS", Target: "a target", Detail: "a detail"}}
	return c
}

func TestWriteTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "compare-20261128-100000.md")
	if err := writeTable(path, tableComparison()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	wantLines := []string{
		"# `make bench`: Courier against MultiKueue, 2026-11-28T10:00:00Z",
		"Written by `courier-bench compare` from `compare-20261128-100000.json`: generated, not typed.",
		"- 2 repeats, each load through the systems in a rotating order (repeat 1: courier, multikueue; repeat 2: multikueue, courier); CPU profiling off for every system",
		"## burst-100: 100 one-GPU TrainJobs at once",
		"|  | Courier (defaults, BestFit) (2) | MultiKueue v0.19.1 (2) |",
		"| Throughput: jobs complete per second, first submission to last complete | 2.20 (2.00–2.40) | 1.10 (1.00–1.20) |",
		"| Submission → job complete on the manager, p95 (s) | 20.0 (20.0–20.0) | 20.0 (20.0–20.0) |",
		"| Manager side: CPU ms per job | 95.0 (90.0–100.0) | 145.0 (140.0–150.0) |",
		"- Before every phase, after its warm-up, each side's CPU measured at rest for 30 s",
		"| Manager side: CPU at rest before the phase (cores) | 0.25 (0.25–0.25) | 0.25 (0.25–0.25) |",
		"| Manager side: CPU ms per job above its rest | 25.0 (10.0–40.0) | 25.0 (20.0–30.0) |",
		"| The Courier process (idle in MultiKueue's phases): dispatch passes per job | 10.00 (9.50–10.50) | 0.00 (0.00–0.00) |",
		"| To the workers, the dispatcher: writes per job | 1.00 (1.00–1.00) | 1.00 (1.00–1.00) |",
		"| To the manager, Courier (idle in MultiKueue's phases): writes per job | 2.50 (2.00–3.00) | 0.00 (0.00–0.00) |",
		"| `courier: patch workloads.kueue.x-k8s.io/status` | 2.50 (2.00–3.00) | 0.00 (0.00–0.00) |",
		"| `courier: patch workloads.kueue.x-k8s.io/status (409)` | 0.01 (0.01–0.01) | 0.01 (0.01–0.01) |",
		"| From the manager, the Courier process's own count: watch events received per job | 9.5 (9.0–10.0) | 14.5 (14.0–15.0) |",
		"| `manager Workload.kueue.x-k8s.io` | 9.50 (9.00–10.00) | 14.50 (14.00–15.00) |",
		"| **PASS** | a target | a detail |",
		"| Machine probe through the phase: median CPU ms of the same work | – | 131 |",
		"| 1 | burst-100 | MultiKueue v0.19.1 | 10:01:00 | 60 | 90% | 5% |  |  | 3.2 / 4.5 |  | a warning |",
		"| 2 | burst-100 | MultiKueue v0.19.1 | 10:02:00 | 60 | 90% | 5% | 1.2% | 104 / 131 | 3.2 / 4.5 | manager 1, worker-2 2 |  |",
	}
	for _, want := range wantLines {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("the table has no line %q:\n%s", want, data)
		}
	}
}

func TestWriteSummary(t *testing.T) {
	c := tableComparison()
	path := filepath.Join(t.TempDir(), "compare-20261128-100000.txt")
	if err := writeSummary(path, c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	wantHeader := []string{
		"courier-bench compare, started 2026-11-28T10:00:00Z",
		"command: courier-bench compare --bursts 100",
		"machine: 2 CPUs, AMD EPYC, 23 GiB, Linux 6.18.0",
		"versions: kueue kueue-v0.19.1",
		"",
		"== burst-100: 100 one-GPU TrainJobs at once; medians of the repeats (least–greatest) ==",
	}
	if diff := cmp.Diff(wantHeader, lines[:len(wantHeader)]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	var printed strings.Builder
	if err := printComparison(&printed, c); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), printed.String()) {
		t.Errorf("the summary does not end with what the comparison prints:\n%s", data)
	}
	const rotated = "burst-100, MultiKueue v0.19.1, repeat 2: the requests were counted through a rotation of the audit logs of manager 1, worker-2 2"
	if !slices.Contains(lines, rotated) {
		t.Errorf("the summary has no line %q:\n%s", rotated, data)
	}
}
