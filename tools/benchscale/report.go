package benchscale

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one (W, N) run, as written to its JSON file.
type Result struct {
	Workers       int       `json:"workers"`
	Workloads     int       `json:"workloads"`
	CourierBinary string    `json:"courierBinary"`
	Seed          uint64    `json:"seed"`
	Started       time.Time `json:"started"`
	// IdleRSSBytes is the RSS of a Courier connected to every worker with
	// no workload, run on its own before the backlog was created, and
	// IdleCPUMillis the CPU time it took to start, connect and idle.
	IdleRSSBytes  uint64   `json:"idleRSSBytes"`
	IdleCPUMillis float64  `json:"idleCPUMillis"`
	Backlog       Backlog  `json:"backlog"`
	Steady        Steady   `json:"steady"`
	Profiles      []string `json:"profiles,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// topRequests lists the most frequent requests per workload, then the
// failed ones in all.
func topRequests(r Requests, workloads int) string {
	var parts []string
	for _, e := range top(r.ByVerb, 5) {
		parts = append(parts, fmt.Sprintf("%s %.2f", e.key, float64(e.count)/float64(workloads)))
	}
	s := strings.Join(parts, ", ")
	if n := r.failures(); n > 0 {
		var failed []string
		for _, e := range top(r.Failed, 3) {
			failed = append(failed, fmt.Sprintf("%s: %d", e.key, e.count))
		}
		s += fmt.Sprintf("; %d failed (%s)", n, strings.Join(failed, ", "))
	}
	return s
}

type counted struct {
	key   string
	count int
}

// top returns the n largest counts, largest first.
func top(counts map[string]int, n int) []counted {
	var entries []counted
	for k, v := range counts {
		entries = append(entries, counted{k, v})
	}
	slices.SortFunc(entries, func(a, b counted) int {
		return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.key, b.key))
	})
	return entries[:min(len(entries), n)]
}

// printCost prints the lines every phase has.
func printCost(w io.Writer, c Cost, workloads int) {
	fmt.Fprintf(w, "\tCPU\t%.2f ms/dispatch\t%.0f ms in a %.1f s window; the whole machine %.0f%% busy\n", c.CPUMillisPerDispatch, c.CPUMillis, c.Seconds, 100*c.MachineBusy)
	fmt.Fprintf(w, "\tstack\tCPU, share of the machine\t%s\n", stackLine(c.Stack))
	fmt.Fprintf(w, "\treconciles\t%.2f /dispatch\tqueue wait %s; pass %s\n", c.ReconcilesPerDispatch, c.QueueWait, c.Pass)
	fmt.Fprintf(w, "\tmanager requests\t%.2f reads + %.2f writes /workload\t%s\n",
		c.PerWorkload.ManagerReads, c.PerWorkload.ManagerWrites, topRequests(c.Manager, workloads))
	fmt.Fprintf(w, "\tworker requests\t%.2f reads + %.2f writes /workload\t%s\n",
		c.PerWorkload.WorkerReads, c.PerWorkload.WorkerWrites, topRequests(c.Workers, workloads))
	fmt.Fprintf(w, "\tworker writes\t%s\tas Courier timed them, up to the response headers\n", c.WorkerWrites)
}

// printRun prints a run as a table.
func printRun(out io.Writer, r *Result) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\n== %d workers, %d pending workloads (courier %s, seed %d) ==\n", r.Workers, r.Workloads, r.CourierBinary, r.Seed)
	fmt.Fprintf(w, "idle\tstart-up\t%.0f ms CPU\tRSS %s, connected to every worker and settled %s, no workload\n",
		r.IdleCPUMillis, mib(float64(r.IdleRSSBytes)), idleSettle)
	b := r.Backlog
	fmt.Fprintf(w, "backlog\tthroughput\t%.1f workloads/s\tall Ready %.2f s after Courier's start, the first after %.2f s; created in %.1f s\n",
		b.Throughput, b.DrainSeconds, b.FirstReadySeconds, b.CreateSeconds)
	fmt.Fprintf(w, "\tmemory\t%.1f KiB/pending workload\tidle %s, peak %s\n",
		b.RSSPerPendingBytes/1024, mib(float64(r.IdleRSSBytes)), mib(float64(b.Cost.PeakRSSBytes)))
	printCost(w, b.Cost, r.Workloads)
	if s := r.Steady; s.Count > 0 {
		fmt.Fprintf(w, "steady\tarrivals\t%.1f /s\t%d asked at %.1f /s\n", s.AchievedRate, s.Count, s.RequestedRate)
		fmt.Fprintf(w, "\tlatency\t%s\tquota reserved to check Ready\n", s.Latency)
		fmt.Fprintf(w, "\t  to first copy\t%s\tCourier: quota reserved to a worker seeing the first copy\n", s.ToFirstCopy)
		fmt.Fprintf(w, "\t  admitted to Ready\t%s\tCourier: first worker admission to check Ready\n", s.AdmittedToReady)
		fmt.Fprintf(w, "\tmemory\tpeak %s\t\n", mib(float64(s.Cost.PeakRSSBytes)))
		printCost(w, s.Cost, s.Count)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(out, "profile: %s\n", p)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(out, "WARNING: %s\n", warning)
	}
	return nil
}
