package benchstack

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
	"github.com/courierdev/courier/tools/localcluster"
)

// printComparison prints each load's figures over the repeats, system by
// system, then per phase the steps to Ready, the CPU of the stack's
// processes and the requests by identity, the targets and the warnings.
func printComparison(out io.Writer, c *Comparison) error {
	for _, l := range c.Summaries {
		fmt.Fprintf(out, "\n== %s: %d %s %s; medians of the repeats (least–greatest) ==\n", l.Load, l.Jobs, l.Kind, describeRate(l.Rate))
		w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		cols := []string{""}
		for _, s := range l.Systems {
			cols = append(cols, fmt.Sprintf("%s (%d)", s.Label, s.Repeats))
		}
		fmt.Fprintf(w, "%s\t\n", strings.Join(cols, "\t"))
		for _, f := range figures {
			row := []string{f.label}
			present := false
			for _, s := range l.Systems {
				st, ok := s.Figures[f.key]
				present = present || ok
				row = append(row, cell(st, f.format))
			}
			if present {
				fmt.Fprintf(w, "%s\t\n", strings.Join(row, "\t"))
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "\nThe steps to the check Ready, p50 / p95 s from quota reserved on the manager: a worker's quota for a copy, the job's copy on a worker, the check Ready:")
	for _, p := range c.Phases {
		fmt.Fprintf(out, "  %s: %s\n", phaseName(p), describeSteps(p))
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
		fmt.Fprintf(out, "  %s: %s; outside the stack %.0f%%, load average %.1f (highest %.1f)%s\n", phaseName(p), strings.Join(parts, ", "),
			100*p.OutsideStack, p.LoadAverage.Mean, p.LoadAverage.Max, describeMachine(p.Machine))
	}
	fmt.Fprintln(out, "\nRequests to the manager per job, by identity: writes, GETs, LISTs, WATCHes opened, other; watch events received (KiB):")
	for _, p := range c.Phases {
		fmt.Fprintf(out, "  %s:\n", phaseName(p))
		printIdentities(out, p.ManagerRequests, p.Jobs, "")
	}
	fmt.Fprintln(out, "\nRequests to the workers per job, by the dispatcher identity's programs: the same:")
	for _, p := range c.Phases {
		fmt.Fprintf(out, "  %s:\n", phaseName(p))
		printIdentities(out, p.WorkerRequests, p.Jobs, localcluster.WorkerUser)
	}
	fmt.Fprintln(out, "\nCourier's requests per job, by call, per phase: to the manager, then to the workers:")
	for _, p := range c.Phases {
		fmt.Fprintf(out, "  %s:\n    manager: %s\n    workers: %s\n", phaseName(p),
			describeCalls(p.ManagerRequests.Of("courier", ""), p.Jobs), describeCalls(p.WorkerRequests.Of("courier", localcluster.WorkerUser), p.Jobs))
	}
	benchreport.PrintVerdicts(out, c.Verdicts)
	if len(c.BelowSaturation) > 0 {
		fmt.Fprintln(out, "\nBelow saturation, side by side (not a target):")
		for _, line := range c.BelowSaturation {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	for _, p := range c.Phases {
		i := p.Invariants
		for what, names := range map[string][]string{"finished with the check never Ready": i.FinishedNeverReady,
			"without their final status on the manager": i.FinalStatusMissing, "seen on two workers": i.OnTwoWorkers} {
			if len(names) > 0 {
				fmt.Fprintf(out, "WARNING: %s: %d jobs %s: %s\n", phaseName(p), len(names), what, firstOf(names, 5))
			}
		}
		for _, warning := range p.Warnings {
			fmt.Fprintf(out, "WARNING: %s: %s\n", phaseName(p), warning)
		}
		if len(p.AuditRotations) > 0 {
			fmt.Fprintf(out, "%s: the requests were counted through a rotation of the audit logs of %s\n", phaseName(p), rotations(p.AuditRotations))
		}
	}
	return nil
}

func phaseName(p PhaseResult) string {
	return fmt.Sprintf("%s, %s, repeat %d", p.Load, p.SystemLabel, p.Repeat+1)
}

// printIdentities prints each identity's requests per job, of user only
// unless it is empty, busiest first.
func printIdentities(out io.Writer, s SideRequests, jobs int, user string) {
	type row struct {
		id string
		t  RequestTotals
	}
	var rows []row
	for key, r := range s.ByIdentity {
		if user != "" && r.Identity.User != user {
			continue
		}
		rows = append(rows, row{key, r.Totals()})
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(allRequests(b.t), allRequests(a.t)), strings.Compare(a.id, b.id))
	})
	for _, r := range rows {
		t := r.t
		fmt.Fprintf(out, "    %s: %.2f, %.2f, %.2f, %.2f, %.2f; %.1f (%.1f KiB)\n", r.id, perJob(t.Writes, jobs), perJob(t.Gets, jobs),
			perJob(t.Lists, jobs), perJob(t.WatchesOpened, jobs), perJob(t.Other, jobs), perJob(t.WatchEvents, jobs), perJob(t.WatchBytes/1024, jobs))
	}
	if len(s.Unattributed) > 0 {
		var parts []string
		for _, res := range slices.Sorted(maps.Keys(s.Unattributed)) {
			parts = append(parts, fmt.Sprintf("%s %.0f", res, s.Unattributed[res].Events))
		}
		fmt.Fprintf(out, "    watch events no watch of the window took: %s\n", strings.Join(parts, ", "))
	}
}

// describeCalls lists the calls per job, most first; refused ones apart.
func describeCalls(r APIRequests, jobs int) string {
	keys := slices.Collect(maps.Keys(r.ByCall))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.ByCall[b].N, r.ByCall[a].N), strings.Compare(a, b))
	})
	var parts []string
	for _, k := range keys {
		c := r.ByCall[k]
		part := fmt.Sprintf("%s %.2f", k, perJob(float64(c.N), jobs))
		if c.Conflict > 0 || c.Failed > 0 {
			part += fmt.Sprintf(" (409: %.2f, other errors: %.2f)", perJob(float64(c.Conflict), jobs), perJob(float64(c.Failed), jobs))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
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

// describeMachine is "; stolen by the host 1.2%, probe 104 ms at rest and
// 131 through": the phase's MachineCheck, "" if it has none.
func describeMachine(m *MachineCheck) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf("; stolen by the host %.1f%%, probe %.0f ms at rest and %.0f through", 100*m.Steal, m.RestProbeCPUMs, m.PhaseProbeCPUMs)
}
