package benchstack

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/courierdev/courier/tools/localcluster"
)

// glanceRow is one headline figure of the at-a-glance table. A row with
// versus set shows Courier's median against the better MultiKueue's and
// their ratio; one without, Courier's alone.
type glanceRow struct {
	label, key, format string
	versus, higher     bool
}

// glanceRows are the figures the issue-41 targets and the docs' summary
// speak of, in the order docs/performance.md shows them.
var glanceRows = []glanceRow{
	{"jobs/s complete", "throughput", "%.2f", true, true},
	{"p95 submission → complete (s)", "submitToComplete.p95", "%.1f", true, false},
	{"p95 submission → check Ready (s)", "submitToReady.p95", "%.1f", true, false},
	{"manager side, CPU ms per job", "manager.cpu", "%.1f", true, false},
	{"worker side, CPU ms per job", "worker.cpu", "%.1f", true, false},
	{"the whole stack, CPU ms per job (every process, the harness's too)", "stack.cpu", "%.1f", true, false},
	{"requests and watch events to the workers per job", "toWorkers.all", "%.1f", true, false},
	{"Courier's writes to the manager per job", "courierToManager.writes", "%.2f", false, false},
}

// courierProcessKey is the Courier process's CPU per job, which the table
// shows in Courier's phases and, idle, in MultiKueue's.
const courierProcessKey = "process." + localcluster.CourierProcess

// glanceSuffix ends the name of the at-a-glance table, beside the JSON.
const glanceSuffix = "-glance.md"

// writeGlance writes the at-a-glance table, in Markdown, to path: the
// headline medians of every load side by side, then the verdicts.
// docs/performance.md includes the file as it is, and test/docs checks
// that the two agree, so the summary there is never typed by hand.
func writeGlance(path string, c *Comparison) error {
	var b bytes.Buffer
	printGlance(&b, c, filepath.Base(strings.TrimSuffix(path, glanceSuffix)+".json"))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the at-a-glance table: %w", err)
	}
	return nil
}

func printGlance(w io.Writer, c *Comparison, source string) {
	fmt.Fprintf(w, "Written by `courier-bench compare` from `%s`: generated, not typed. ", source)
	fmt.Fprintf(w, "Started %s UTC with %s. Systems: %s. %d repeats in a rotating order, CPU profiling %s for every system. ",
		c.Started.UTC().Format("2006-01-02 15:04"), courierRevision(c.Versions), strings.Join(systemLabels(c), "; "),
		c.Repeats, map[bool]string{true: "on", false: "off"}[c.Profile])
	fmt.Fprintf(w, "Medians of the repeats, Courier / the better MultiKueue (the ratio); the least and greatest of each are in the full table.\n\n")
	cols, align := []string{""}, []string{"---"}
	for _, l := range c.Summaries {
		cols = append(cols, fmt.Sprintf("%s: %d %s", l.Load, l.Jobs, describeRate(l.Rate)))
		align = append(align, "---:")
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(cols, " | "), strings.Join(align, " | "))
	for _, r := range glanceRows {
		row := []string{r.label}
		for _, l := range c.Summaries {
			row = append(row, glanceCell(l, r))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	row := []string{"the Courier process, CPU ms per job (idle through MultiKueue's phases)"}
	for _, l := range c.Summaries {
		row = append(row, idleCell(l))
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	row = []string{"jobs that broke an invariant over the repeats, Courier / each MultiKueue"}
	for _, l := range c.Summaries {
		row = append(row, brokenCell(l))
	}
	fmt.Fprintf(w, "| %s |\n\n", strings.Join(row, " | "))
	fmt.Fprintf(w, "Targets, on the medians:\n\n")
	printVerdicts(w, c)
}

// glanceCell is "3.05 / 2.17 (1.41×)", Courier's median alone without a
// MultiKueue to compare, and "–" where Courier did not run or the figure
// was not measured.
func glanceCell(l LoadSummary, r glanceRow) string {
	s := l.system(SystemCourier)
	if s == nil {
		return "–"
	}
	cv, ok := s.Figures[r.key]
	if !ok || cv.N == 0 {
		return "–"
	}
	out := fmt.Sprintf(r.format, cv.Median)
	if !r.versus {
		return out
	}
	mk := betterMultiKueue(l, r.key, r.higher)
	if mk == nil {
		return out
	}
	mv := mk.Figures[r.key].Median
	out += " / " + fmt.Sprintf(r.format, mv)
	if mv > 0 {
		out += fmt.Sprintf(" (%.2f×)", cv.Median/mv)
	}
	return out
}

// idleCell is "16.3 (6.5)": the Courier process's CPU per job in
// Courier's phases and, in parentheses, idle, the least of its medians
// over the MultiKueue builds' phases.
func idleCell(l LoadSummary) string {
	out := glanceCell(l, glanceRow{key: courierProcessKey, format: "%.1f"})
	if mk := betterMultiKueue(l, courierProcessKey, false); mk != nil && out != "–" {
		out += fmt.Sprintf(" (%.1f)", mk.Figures[courierProcessKey].Median)
	}
	return out
}

// brokenCell is "0 / 19": the jobs that broke an invariant over the
// repeats, Courier's then every MultiKueue's that ran.
func brokenCell(l LoadSummary) string {
	var parts []string
	for _, name := range append([]string{SystemCourier}, multiKueues...) {
		if s := l.system(name); s != nil {
			parts = append(parts, fmt.Sprint(s.Broken))
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, " / ")
}

// systemLabels are the systems the comparison ran, in SystemOrder.
func systemLabels(c *Comparison) []string {
	ran := map[string]bool{}
	for _, p := range c.Phases {
		ran[p.System] = true
	}
	var out []string
	for _, name := range SystemOrder {
		if ran[name] {
			out = append(out, Systems[name].Label)
		}
	}
	return out
}

var revision = regexp.MustCompile(`revision ([0-9a-f]{7})`)

// courierRevision is "Courier at edd77dd", from the version the Courier
// binary reported, or "Courier's revision unknown".
func courierRevision(versions map[string]string) string {
	if m := revision.FindStringSubmatch(versions["courier"]); m != nil {
		return "Courier at " + m[1]
	}
	return "Courier's revision unknown"
}
