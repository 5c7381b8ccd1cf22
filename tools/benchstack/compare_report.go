package benchstack

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// printComparison prints each load's systems side by side, then the CPU of
// the stack's processes per phase, the targets and the warnings.
func printComparison(out io.Writer, c *Comparison) error {
	var w *tabwriter.Writer
	var load string
	for _, p := range c.Phases {
		if p.Load != load {
			if w != nil {
				if err := w.Flush(); err != nil {
					return err
				}
			}
			load = p.Load
			fmt.Fprintf(out, "\n== %s: %d %s %s ==\n", p.Load, p.Jobs, p.Kind, describeRate(p.Rate))
			w = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "system\tthroughput /s\tquota→Ready p50/p95/p99 s\tReady→Complete p50/p95/p99 s\trequests /wl\tgets+writes /wl\twrites /wl\tdispatcher CPU ms /wl\tpeak RSS MiB\tmachine busy\tinvariants broken\t")
		}
		fmt.Fprintf(w, "%s\t%.2f\t%.1f / %.1f / %.1f\t%.1f / %.1f / %.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f%%\t%d\t\n",
			p.SystemLabel, p.Throughput,
			p.QuotaToReady.P50, p.QuotaToReady.P95, p.QuotaToReady.P99,
			p.ReadyToComplete.P50, p.ReadyToComplete.P95, p.ReadyToComplete.P99,
			p.Requests.PerWorkload.Total, p.Requests.PerWorkload.ForWorkloads, p.Requests.PerWorkload.Writes,
			p.Dispatcher.CPUMsPerWorkload, p.Dispatcher.PeakRSSMiB, 100*p.MachineBusy, p.Invariants.Broken())
	}
	if w != nil {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "\nFor MultiKueue the dispatcher's CPU and memory are the whole manager Kueue process, which also admits the workloads.")
	fmt.Fprintln(out, "Requests are the dispatcher identity's, from the workers' audit logs; gets+writes are those the workloads cause.")

	fmt.Fprintln(out, "\nThe steps to the check Ready, p50 / p95 s from quota reserved on the manager: a worker's quota for a copy, the job's copy on a worker, the check Ready:")
	for _, p := range c.Phases {
		fmt.Fprintf(out, "  %s, %s: %s\n", p.Load, p.SystemLabel, describeSteps(p))
	}
	fmt.Fprintln(out, "\nCPU share of each process of the stack, per phase (of both cores; the largest first):")
	for _, p := range c.Phases {
		var parts []string
		for _, pc := range p.CPU {
			if pc.Machine < 0.005 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", pc.Name, 100*pc.Machine))
		}
		fmt.Fprintf(out, "  %s, %s: %s\n", p.Load, p.SystemLabel, strings.Join(parts, ", "))
	}
	fmt.Fprintln(out, "\nRequests to the workers per workload, by call, per phase:")
	for _, p := range c.Phases {
		var calls []string
		for _, k := range byCount(p.Requests.ByCall) {
			calls = append(calls, fmt.Sprintf("%s %.2f", k, float64(p.Requests.ByCall[k])/float64(p.Jobs)))
		}
		fmt.Fprintf(out, "  %s, %s: %s\n", p.Load, p.SystemLabel, strings.Join(calls, ", "))
	}
	benchreport.PrintVerdicts(out, c.Verdicts)
	for _, p := range c.Phases {
		i := p.Invariants
		for what, names := range map[string][]string{"finished with the check never Ready": i.FinishedNeverReady,
			"without their final status on the manager": i.FinalStatusMissing, "seen on two workers": i.OnTwoWorkers} {
			if len(names) > 0 {
				fmt.Fprintf(out, "WARNING: %s, %s: %d jobs %s: %s\n", p.Load, p.SystemLabel, len(names), what, firstOf(names, 5))
			}
		}
		for _, warning := range p.Warnings {
			fmt.Fprintf(out, "WARNING: %s, %s: %s\n", p.Load, p.SystemLabel, warning)
		}
	}
	return nil
}

// writeSummary saves what the comparison prints, under the run's command,
// machine and versions: a few kilobytes to keep in the repository's
// records, where the JSON, with every job's samples, is too large.
func writeSummary(path string, c *Comparison) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "courier-bench compare, started %s\ncommand: %s\nmachine: %d CPUs, %s, %d GiB, Linux %s\n",
		c.Started.UTC().Format(time.RFC3339), c.Command, c.Machine.CPUs, c.Machine.Model, c.Machine.MemoryGi, c.Machine.Kernel)
	var versions []string
	for _, name := range slices.Sorted(maps.Keys(c.Versions)) {
		versions = append(versions, name+" "+c.Versions[name])
	}
	fmt.Fprintf(&b, "versions: %s\n", strings.Join(versions, ", "))
	if err := printComparison(&b, c); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}

// describeSteps puts the steps to the check Ready side by side.
func describeSteps(p PhaseResult) string {
	// Results from before the steps were measured hold none.
	if p.QuotaToWorkerQuota == (benchreport.Percentiles{}) && p.QuotaToJobOnWorker == (benchreport.Percentiles{}) {
		return "not measured"
	}
	step := func(name string, q benchreport.Percentiles) string {
		return fmt.Sprintf("%s %.2f / %.2f", name, q.P50, q.P95)
	}
	return strings.Join([]string{step("worker's quota", p.QuotaToWorkerQuota), step("job on a worker", p.QuotaToJobOnWorker),
		step("check Ready", p.QuotaToReady)}, ", ")
}
