package benchstack

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// cell is a Stat as the table shows it: the median, and the least and
// greatest over the repeats when there were several.
func cell(s Stat, format string) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

// attribution says how the processes and requests are counted, under the
// table.
const attribution = `How it is counted:

- **Latency** is from a job's submission (the create sent to the manager) to its Workload's check Ready on the manager, to a copy of the job first seen unsuspended on a worker (its worker's Kueue admitted it: it runs), and to the manager job Complete; each time as the harness's informers first saw it. Quota reserved → check Ready is the dispatcher's own share, after the manager's queueing. Throughput is the jobs complete over the time from the first submission to the last complete.
- **Manager side** is, for Courier, the Courier process, the manager's Kueue (which admits), the manager's API server and its etcd; for MultiKueue, the manager's Kueue (which admits and dispatches, one process), the manager's API server and its etcd; for the floor, no dispatcher (the harness turns the check Ready and completes the job, two writes per job, and nothing reaches a worker), the manager's Kueue, API server and etcd: what the manager side costs whatever dispatches. For the harness as dispatcher at no cost of its own (free), the floor's manager side, with each job run on a worker through copies the harness sends, from its own process. The Courier process runs idle through MultiKueue's phases, watching the manager: it is in neither side there (its own row gives its requests). The manager's Kueue runs MultiKueue's idle connections to the workers through Courier's phases, inside its process. **Worker side** is the workers' API servers and etcds. **The whole stack** is every process the bench runs: both sides, the workers' Kueue, Trainer, JobSet and Kubernetes controllers, the idle dispatcher and the harness itself; on a saturated machine the throughput is about the machine's cores over its CPU per job. CPU is from /proc/<pid>/stat over the phase; peak RSS is the largest sum of the side's resident memory, sampled every 0.5 s, and its growth the rise above the sum at the phase's start. **At rest** (when measured, --rest) is each side's CPU just before the phase, after its warm-up, with no job in flight, in cores; **above its rest** is the phase's CPU less that rate over the phase's window, per job: what the jobs cost beyond what the side costs idle. The targets are judged on the whole CPU per job.
- **Requests** are from the API servers' audit logs (every request to the manager; the dispatcher's to the workers, who uses the ServiceAccount courier-system/courier there for both systems), by program (the user agent up to its first slash: courier, kueue, bench-floor): writes, GETs, LISTs and WATCHes opened in the phase. **Watch events** and their bytes are the API servers' own counts (apiserver_watch_events_total and apiserver_watch_events_sizes, one per event per watch), not per identity: they are shared among the watches the audit logs show running in the phase. A watch of Workloads, TrainJobs or Jobs gets the events of the objects its label selector matches, from the harness's own informers' count; the rest of a resource's events, by each watch's seconds. Watch bytes are the resource's average event size times the events. The rows "the Courier process's own count" are not shared out: they are the events and bytes Courier's informers counted reading (its courier_manager_watch_events_total and courier_remote_watch_events_total, with their bytes), in every phase, idle in MultiKueue's; they check the shares above for one identity.
- **Load average and outside the stack**: the machine's one-minute load average over each phase, and the share of both cores busy in no process of the stack: other work on the machine.
- **The machine itself**: the share of its CPU its host gave to others (steal, from /proc/stat), and a probe, the same fixed work (SHA-256 over 128 MiB read from a 64 MiB buffer, on one thread) timed in CPU ms: the least of three runs at rest before each phase, and the median of one every 15 s through it. A probe slower at rest than in earlier phases says the machine slowed, not the stack's work per job; one slower through a phase than at rest, that the stack's processes slow one another on the shared cores.
`

// writeTable writes the comparison table, in Markdown, to path.
func writeTable(path string, c *Comparison) error {
	var b bytes.Buffer
	printTable(&b, c, filepath.Base(strings.TrimSuffix(path, ".md")+".json"))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the comparison table: %w", err)
	}
	return nil
}

func printTable(w io.Writer, c *Comparison, source string) {
	fmt.Fprintf(w, "# `make bench`: Courier against MultiKueue, %s\n\n", c.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "Written by `courier-bench compare` from `%s`: generated, not typed.\n\n", source)
	fmt.Fprintf(w, "- Command: `%s`\n", c.Command)
	fmt.Fprintf(w, "- Machine: %d CPUs, %s, %d GiB, Linux %s\n", c.Machine.CPUs, c.Machine.Model, c.Machine.MemoryGi, c.Machine.Kernel)
	var versions []string
	for _, name := range slices.Sorted(maps.Keys(c.Versions)) {
		versions = append(versions, name+" "+c.Versions[name])
	}
	fmt.Fprintf(w, "- Versions: %s\n", strings.Join(versions, ", "))
	var orders []string
	for i, o := range c.Orders {
		orders = append(orders, fmt.Sprintf("repeat %d: %s", i+1, strings.Join(o, ", ")))
	}
	fmt.Fprintf(w, "- %d repeats, each load through the systems in a rotating order (%s); CPU profiling %s for every system\n",
		c.Repeats, strings.Join(orders, "; "), map[bool]string{true: "on", false: "off"}[c.Profile])
	if c.RestSeconds > 0 {
		fmt.Fprintf(w, "- Before every phase, after its warm-up, each side's CPU measured at rest for %.0f s\n", c.RestSeconds)
	}
	fmt.Fprintf(w, "- Every cell: the median of the repeats (least–greatest)\n\n")
	fmt.Fprint(w, attribution)
	for _, l := range c.Summaries {
		fmt.Fprintf(w, "\n## %s: %d %s %s\n\n", l.Load, l.Jobs, l.Kind, describeRate(l.Rate))
		header(w, l)
		for _, f := range figures {
			present := false
			for _, s := range l.Systems {
				_, ok := s.Figures[f.key]
				present = present || ok
			}
			if !present {
				continue
			}
			row := []string{f.label}
			for _, s := range l.Systems {
				row = append(row, cell(s.Figures[f.key], f.format))
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		fmt.Fprintf(w, "\nWrites to the manager per job, by program and call, each counted whatever its answer; of them, (409) those refused for a conflict or as existing, (409, lost to P) an update's or a patch's conflicts by the program P of the last write to the object before the refusal, the write whose version the refused one did not know, (failed) those failed otherwise; (dry run) writes sent with dryRun, which store nothing:\n\n")
		keyedRows(w, l, func(s SystemSummary) map[string]Stat { return s.ManagerWrites })
		if slices.ContainsFunc(l.Systems, func(s SystemSummary) bool { return len(s.CourierWatch) > 0 }) {
			fmt.Fprintf(w, "\nWatch events the Courier process read per job, as it counts them, by side (the workers' together) and kind watched; idle in MultiKueue's phases:\n\n")
			keyedRows(w, l, func(s SystemSummary) map[string]Stat { return s.CourierWatch })
		}
	}
	fmt.Fprintf(w, "\n## Targets, on the medians\n\n")
	printVerdicts(w, c)
	if len(c.BelowSaturation) > 0 {
		fmt.Fprintf(w, "\nBelow saturation, side by side (not a target: both dispatchers sit at the same floor of round trips there):\n\n")
		for _, line := range c.BelowSaturation {
			fmt.Fprintf(w, "- %s\n", line)
		}
	}
	fmt.Fprintf(w, "\n## Each phase, in the order run\n\n| Repeat | Load | System | Started (UTC) | Window (s) | Machine busy | Outside the stack | Stolen by the host | Probe CPU ms, at rest / through | Load average, mean / highest | Audit logs rotated | Warnings |\n|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, p := range c.Phases {
		fmt.Fprintf(w, "| %d | %s | %s | %s | %.0f | %.0f%% | %.0f%% | %s | %s | %.1f / %.1f | %s | %s |\n", p.Repeat+1, p.Load, p.SystemLabel,
			p.Started.UTC().Format("15:04:05"), p.WindowSeconds, 100*p.MachineBusy, 100*p.OutsideStack, stealCell(p.Machine), probeCell(p.Machine),
			p.LoadAverage.Mean, p.LoadAverage.Max, rotations(p.AuditRotations), strings.Join(p.Warnings, "; "))
	}
	for _, plot := range c.Plots {
		fmt.Fprintf(w, "\n![%s](%s)\n", filepath.Base(plot), filepath.Base(plot))
	}
}

// printVerdicts prints the verdicts as a table.
func printVerdicts(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "| Verdict | Target | Detail |\n|---|---|---|\n")
	for _, v := range c.Verdicts {
		fmt.Fprintf(w, "| **%s** | %s | %s |\n", v.Status, v.Target, v.Detail)
	}
}

// keyedRows prints a table of figures by key, a row per key in order, a
// column per system; a key a system lacks reads 0.
func keyedRows(w io.Writer, l LoadSummary, of func(SystemSummary) map[string]Stat) {
	header(w, l)
	keys := map[string]bool{}
	for _, s := range l.Systems {
		for k := range of(s) {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		row := []string{"`" + k + "`"}
		for _, s := range l.Systems {
			row = append(row, cell(of(s)[k], "%.2f"))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// rotations is "manager 1, worker-2 1": the audit logs a phase's reads
// followed through a rotation, and how often; "" for none.
func rotations(byCluster map[string]int) string {
	var parts []string
	for _, cluster := range slices.Sorted(maps.Keys(byCluster)) {
		parts = append(parts, fmt.Sprintf("%s %d", cluster, byCluster[cluster]))
	}
	return strings.Join(parts, ", ")
}

func header(w io.Writer, l LoadSummary) {
	cols := []string{""}
	align := []string{"---"}
	for _, s := range l.Systems {
		cols = append(cols, fmt.Sprintf("%s (%d)", s.Label, s.Repeats))
		align = append(align, "---:")
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(cols, " | "), strings.Join(align, " | "))
}

// stealCell is the share of the machine its host took, "" where it was
// not measured: phases recorded before it was.
func stealCell(m *MachineCheck) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf("%.1f%%", 100*m.Steal)
}

// probeCell is "104 / 131" (at rest / median through the phase), "" where
// the probe did not run.
func probeCell(m *MachineCheck) string {
	switch {
	case m == nil:
		return ""
	case m.PhaseProbeRuns == 0:
		return fmt.Sprintf("%.0f / ", m.RestProbeCPUMs)
	}
	return fmt.Sprintf("%.0f / %.0f", m.RestProbeCPUMs, m.PhaseProbeCPUMs)
}
