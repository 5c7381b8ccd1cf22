package benchstack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestWriteGlance(t *testing.T) {
	c := tableComparison()
	c.Versions["courier"] = "courier v0.0.0-dev (revision edd77ddd5caefaf987e3d78001ddeefaf83071df, go1.26.8, linux/amd64)"
	courier, mk := &c.Summaries[0].Systems[0], &c.Summaries[0].Systems[1]
	courier.Figures[courierProcessKey] = Stat{Median: 16.3, Min: 16.2, Max: 16.4, N: 2}
	mk.Figures[courierProcessKey] = Stat{Median: 6.5, Min: 6.4, Max: 6.6, N: 2}
	courier.Figures["stack.cpu"] = Stat{Median: 700, Min: 690, Max: 710, N: 2}
	mk.Figures["stack.cpu"] = Stat{Median: 1000, Min: 980, Max: 1020, N: 2}
	mk.Broken = 19
	path := filepath.Join(t.TempDir(), "compare-20261128-100000"+glanceSuffix)
	if err := writeGlance(path, c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Written by `courier-bench compare` from `compare-20261128-100000.json`: generated, not typed. " +
			"Started 2026-11-28 10:00 UTC with Courier at edd77dd. Systems: Courier (defaults, BestFit); MultiKueue v0.19.1. " +
			"2 repeats in a rotating order, CPU profiling off for every system. " +
			"Medians of the repeats, Courier / the better MultiKueue (the ratio); the least and greatest of each are in the full table.",
		"",
		"|  | burst-100: 100 at once |",
		"| --- | ---: |",
		"| jobs/s complete | 2.20 / 1.10 (2.00×) |",
		"| p95 submission → complete (s) | 20.0 / 20.0 (1.00×) |",
		"| p95 submission → check Ready (s) | 0.0 / 0.0 |",
		"| manager side, CPU ms per job | 95.0 / 145.0 (0.66×) |",
		"| worker side, CPU ms per job | 50.0 / 50.0 (1.00×) |",
		"| the whole stack, CPU ms per job (every process, the harness's too) | 700.0 / 1000.0 (0.70×) |",
		"| requests and watch events to the workers per job | 1.0 / 1.0 (1.00×) |",
		"| Courier's writes to the manager per job | 2.50 |",
		"| the Courier process, CPU ms per job (idle through MultiKueue's phases) | 16.3 (6.5) |",
		"| jobs that broke an invariant over the repeats, Courier / each MultiKueue | 0 / 19 |",
		"",
		"Targets, on the medians:",
		"",
		"| Verdict | Target | Detail |",
		"|---|---|---|",
		"| **PASS** | a target | a detail |",
		"",
	}
	if diff := cmp.Diff(want, strings.Split(string(data), "\n")); diff != "" {
		t.Errorf("at a glance (-want +got):\n%s", diff)
	}
}

func TestGlanceCell(t *testing.T) {
	courier := SystemSummary{System: SystemCourier, Figures: map[string]Stat{"throughput": {Median: 3.05, N: 3}}}
	qps := SystemSummary{System: SystemMultiKueueQPS, Label: "fast", Figures: map[string]Stat{"throughput": {Median: 2.17, N: 3}}}
	released := SystemSummary{System: SystemMultiKueue, Label: "slow", Figures: map[string]Stat{"throughput": {Median: 0.99, N: 3}}}
	row := glanceRow{key: "throughput", format: "%.2f", versus: true, higher: true}
	cases := map[string]struct {
		systems []SystemSummary
		row     glanceRow
		want    string
	}{
		"against the better of two MultiKueues": {[]SystemSummary{courier, released, qps}, row, "3.05 / 2.17 (1.41×)"},
		"no MultiKueue ran: Courier's alone":    {[]SystemSummary{courier}, row, "3.05"},
		"Courier's alone by the row's choice":   {[]SystemSummary{courier, qps}, glanceRow{key: "throughput", format: "%.2f"}, "3.05"},
		"Courier did not run":                   {[]SystemSummary{qps}, row, "–"},
		"the figure was not measured":           {[]SystemSummary{courier, qps}, glanceRow{key: "worker.cpu", format: "%.1f", versus: true}, "–"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := glanceCell(LoadSummary{Systems: tc.systems}, tc.row); got != tc.want {
				t.Errorf("glanceCell %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTabulateWritesEveryReport: a comparison's JSON, tabulated again,
// gives its summary, its table and its at-a-glance table beside it; its
// phases hold no latency samples, so there is nothing to plot, and that
// must not stop the reports.
func TestTabulateWritesEveryReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "compare-20261128-100000.json")
	if err := benchreport.WriteJSON(path, tableComparison()); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Tabulate(path, &out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"compare-20261128-100000.txt", "compare-20261128-100000.md", "compare-20261128-100000" + glanceSuffix} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("Tabulate wrote no %s: %v", name, err)
		}
	}
	glance, err := os.ReadFile(filepath.Join(dir, "compare-20261128-100000"+glanceSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| jobs/s complete | 2.20 / 1.10 (2.00×) |\n"; !strings.Contains(string(glance), want) {
		t.Errorf("the at-a-glance table has no line %q:\n%s", want, glance)
	}
}
