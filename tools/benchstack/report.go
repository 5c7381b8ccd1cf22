package benchstack

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/courierdev/courier/tools/benchreport"
)

// printResult prints the run as a table, then the targets and warnings.
func printResult(out io.Writer, res *Result) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\n== %d one-GPU TrainJobs at %g/s, %d workers of %dx%d GPUs (run %s) ==\n",
		res.Jobs, res.Rate, len(res.Workers), res.GPUNodes, res.GPUsPerNode, res.Run)
	fmt.Fprintf(w, "jobs\tsubmitted\t%d in %.1f s\t%.2f/s achieved\n", res.Jobs, res.SubmitSeconds, float64(res.Jobs-1)/res.SubmitSeconds)
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(res.Finished)) {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, res.Finished[r]))
	}
	fmt.Fprintf(w, "\tFinished\t%d\t%s\n", res.Jobs, strings.Join(reasons, ", "))
	fmt.Fprintf(w, "\twall time\t%.1f s\tfirst submission to the last Workload Finished; the last copy deleted %.1f s later\n", res.WallSeconds, res.SettleSeconds)
	fmt.Fprintf(w, "\tthroughput\t%.2f jobs/s\tat most the submission rate, %g/s\n", res.Throughput, res.Rate)
	fmt.Fprintf(w, "\tlatency\tp50 %.1f s  p95 %.1f s  max %.1f s\tsubmission to Workload Finished\n", res.Latency.P50, res.Latency.P95, res.Latency.Max)

	p := res.Placement
	for i, wk := range res.Workers {
		section := ""
		if i == 0 {
			section = "placement"
		}
		fmt.Fprintf(w, "%s\t%s\t%d jobs\t%.1f%%, by the worker a TrainJob copy was started on\n", section, wk, p.PerWorker[wk], 100*float64(p.PerWorker[wk])/float64(res.Jobs))
	}
	fmt.Fprintf(w, "\ton two workers\t%d jobs\tTrainJob copies on both; %d Workloads were copied to both (nomination widened)\n", len(p.OnTwoWorkers), p.WorkloadCopiesOnTwo)
	fmt.Fprintf(w, "\trecreated\t%d jobs\ta second TrainJob copy on the same worker\n", p.Recreated)

	r := res.Requests
	fmt.Fprintf(w, "requests\tfor workloads\t%.2f /workload\t%d: %.2f gets + %.2f writes /workload\n", r.PerWorkload.Total, r.Reads+r.Writes, r.PerWorkload.Reads, r.PerWorkload.Writes)
	fmt.Fprintf(w, "\tbackground\t%.1f /min\t%d informers' lists and watches, health probes and discovery, by the minute whatever the workloads\n",
		float64(r.Background)/res.WallSeconds*60, r.Background)
	for _, v := range byCount(r.ByVerb) {
		fmt.Fprintf(w, "\t%s\t%.2f /workload\t%d\n", v, float64(r.ByVerb[v])/float64(res.Jobs), r.ByVerb[v])
	}
	for _, wk := range slices.Sorted(maps.Keys(r.ByWorker)) {
		var total uint64
		var parts []string
		for _, m := range byCount(r.ByWorker[wk]) {
			total += r.ByWorker[wk][m]
			parts = append(parts, fmt.Sprintf("%s %d", m, r.ByWorker[wk][m]))
		}
		fmt.Fprintf(w, "\t%s\t%.2f /workload\t%s\n", wk, float64(total)/float64(res.Jobs), strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "\terrors\t%s\t\n", describeErrors(r.Errors))
	if err := w.Flush(); err != nil {
		return err
	}
	benchreport.PrintVerdicts(out, res.Targets)
	if len(p.OnTwoWorkers) > 0 {
		fmt.Fprintf(out, "WARNING: %d jobs had TrainJob copies on two workers: %s\n", len(p.OnTwoWorkers), firstOf(p.OnTwoWorkers, 10))
	}
	if len(p.NeverStarted) > 0 {
		fmt.Fprintf(out, "WARNING: no started copy was seen of %d jobs: %s\n", len(p.NeverStarted), firstOf(p.NeverStarted, 10))
	}
	for _, warning := range res.Warnings {
		fmt.Fprintf(out, "WARNING: %s\n", warning)
	}
	return nil
}

// byCount orders the keys by count, largest first, then by name.
func byCount(counts map[string]uint64) []string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	return keys
}

func describeErrors(errs map[string]map[string]uint64) string {
	var parts []string
	for _, wk := range slices.Sorted(maps.Keys(errs)) {
		for _, k := range byCount(errs[wk]) {
			parts = append(parts, fmt.Sprintf("%s on %s: %d", k, wk, errs[wk][k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func firstOf(names []string, n int) string {
	s := strings.Join(names[:min(n, len(names))], ", ")
	if len(names) > n {
		s += ", ..."
	}
	return s
}
