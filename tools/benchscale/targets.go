package benchscale

import (
	"fmt"
	"slices"

	"github.com/courierdev/courier/tools/benchreport"
)

// The targets Courier's own cost is held to.
const (
	maxCPUPerDispatchMillis = 10.0
	// maxGrowth bounds how much CPU per dispatch and RSS per pending
	// workload may grow from the matrix's smallest N to its largest, and
	// from its fewest workers to its most.
	maxGrowth = 1.5
	// maxPeakRSS applies at peakRSSWorkloads pending.
	maxPeakRSS       = 300 << 20
	peakRSSWorkloads = 5000
	// minThroughput applies on throughputWorkers workers.
	minThroughput     = 100.0
	throughputWorkers = 2
	maxP95Seconds     = 2.0
)

// evaluate checks every target on the runs that measure it.
func evaluate(results []*Result) []benchreport.Verdict {
	var vs []benchreport.Verdict
	for _, r := range results {
		run := fmt.Sprintf("W=%d N=%d", r.Workers, r.Workloads)
		cpu := r.Backlog.Cost.CPUMillisPerDispatch
		vs = append(vs, benchreport.Check(cpu <= maxCPUPerDispatchMillis,
			fmt.Sprintf("CPU ≤ %.0f ms per dispatch", maxCPUPerDispatchMillis), fmt.Sprintf("%s: %.2f ms", run, cpu)))
		if r.Workloads == peakRSSWorkloads {
			peak := r.Backlog.Cost.PeakRSSBytes
			vs = append(vs, benchreport.Check(peak <= maxPeakRSS,
				fmt.Sprintf("peak RSS ≤ %s at %d pending", mib(maxPeakRSS), peakRSSWorkloads), fmt.Sprintf("%s: %s", run, mib(float64(peak)))))
		}
		if r.Workers == throughputWorkers {
			vs = append(vs, benchreport.Check(r.Backlog.Throughput >= minThroughput,
				fmt.Sprintf("≥ %.0f workloads/s on %d workers", minThroughput, throughputWorkers),
				fmt.Sprintf("%s: %.1f/s%s", run, r.Backlog.Throughput, whoseMachine(r.Backlog.Cost))))
		}
		if r.Steady.Count > 0 {
			p95 := r.Steady.Latency.P95
			vs = append(vs, benchreport.Check(p95 <= maxP95Seconds,
				fmt.Sprintf("p95 latency ≤ %.0f s", maxP95Seconds), fmt.Sprintf("%s: %.3f s", run, p95)))
		}
	}
	if !slices.ContainsFunc(results, func(r *Result) bool { return r.Workloads == peakRSSWorkloads }) {
		vs = append(vs, benchreport.Skip(fmt.Sprintf("peak RSS ≤ %s at %d pending", mib(maxPeakRSS), peakRSSWorkloads),
			fmt.Sprintf("no run with N=%d", peakRSSWorkloads)))
	}
	if !slices.ContainsFunc(results, func(r *Result) bool { return r.Workers == throughputWorkers }) {
		vs = append(vs, benchreport.Skip(fmt.Sprintf("≥ %.0f workloads/s on %d workers", minThroughput, throughputWorkers),
			fmt.Sprintf("no run with W=%d", throughputWorkers)))
	}
	vs = append(vs, growth(results, "N", func(r *Result) int { return r.Workloads }, func(r *Result) int { return r.Workers }, "W")...)
	vs = append(vs, growth(results, "W", func(r *Result) int { return r.Workers }, func(r *Result) int { return r.Workloads }, "N")...)
	return vs
}

// growth compares, for each value of the fixed dimension, the runs at the
// smallest and the largest value of the varied one.
func growth(results []*Result, varied string, by func(*Result) int, fixedBy func(*Result) int, fixed string) []benchreport.Verdict {
	groups := map[int][]*Result{}
	var keys []int
	for _, r := range results {
		k := fixedBy(r)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.Sort(keys)
	metrics := []struct {
		name, format string
		value        func(*Result) float64
	}{
		{"CPU per dispatch", "%.2f ms", func(r *Result) float64 { return r.Backlog.Cost.CPUMillisPerDispatch }},
		{"RSS per pending workload", "%.1f KiB", func(r *Result) float64 { return r.Backlog.RSSPerPendingBytes / 1024 }},
	}
	var vs []benchreport.Verdict
	for _, k := range keys {
		g := groups[k]
		lo := slices.MinFunc(g, func(a, b *Result) int { return by(a) - by(b) })
		hi := slices.MaxFunc(g, func(a, b *Result) int { return by(a) - by(b) })
		if by(lo) == by(hi) {
			continue
		}
		for _, m := range metrics {
			target := fmt.Sprintf("%s grows < %.1fx from %s=%d to %s=%d (%s=%d)", m.name, maxGrowth, varied, by(lo), varied, by(hi), fixed, k)
			a, b := m.value(lo), m.value(hi)
			if a <= 0 {
				vs = append(vs, benchreport.Skip(target, "the smaller run measured "+fmt.Sprintf(m.format, a)+", no base for a ratio"))
				continue
			}
			detail := fmt.Sprintf(m.format+" -> "+m.format+" (%.2fx)", a, b, b/a)
			vs = append(vs, benchreport.Check(b/a < maxGrowth, target, detail))
		}
	}
	if len(vs) == 0 {
		vs = append(vs, benchreport.Skip(fmt.Sprintf("CPU per dispatch and RSS per pending workload grow < %.1fx with %s", maxGrowth, varied),
			fmt.Sprintf("no two runs at different %s with the same %s", varied, fixed)))
	}
	return vs
}

// whoseMachine says how busy the machine was and Courier's share of it, so
// that a throughput the machine caps is told from one Courier caps.
func whoseMachine(c Cost) string {
	for _, p := range c.Stack {
		if p.Name == courierKind {
			return fmt.Sprintf("; the machine %.0f%% busy, Courier %.1f%% of it", 100*c.MachineBusy, 100*p.Machine)
		}
	}
	return ""
}
