package soak

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// Report is what soak.json holds.
type Report struct {
	Options Options   `json:"options"`
	Courier string    `json:"courier"`
	Run     string    `json:"run"`
	Began   time.Time `json:"began"`
	Ended   time.Time `json:"ended"`
	// WorkerLostTimeout and LostWorkerPolicy are Courier's, read from its
	// Configuration.
	WorkerLostTimeout time.Duration `json:"workerLostTimeout"`
	LostWorkerPolicy  string        `json:"lostWorkerPolicy"`
	// Quiet is when the last fault ended.
	Quiet   time.Time `json:"quiet"`
	Faults  []*Fault  `json:"faults"`
	Foreign []Foreign `json:"foreign,omitempty"`
	// Disconnections are the times Courier counted a worker out of use,
	// as its WorkerClusters said, for reading the run; no check uses them.
	Disconnections []Disconnection `json:"disconnections,omitempty"`
	// Overlaps are the jobs whose pods ran on two workers at once, from
	// the workers' own API servers, longest first.
	Overlaps []Overlap `json:"overlaps,omitempty"`
	// RanAgain are the jobs that ran again after one of their pods had
	// succeeded.
	RanAgain   []string    `json:"ranAgain,omitempty"`
	Outcomes   Outcomes    `json:"outcomes"`
	Jobs       []Job       `json:"jobs"`
	Invariants []Invariant `json:"invariants"`
}

// Outcomes count the jobs by how they ended.
type Outcomes struct {
	Submitted   int `json:"submitted"`
	Refused     int `json:"refused"`
	Finished    int `json:"finished"`
	Unfinished  int `json:"unfinished"`
	Redispached int `json:"redispatched"`
	// ByReason counts the Finished reasons (Succeeded, Failed, ...).
	ByReason map[string]int `json:"byReason"`
	// PerWorker counts the jobs whose final copy ran on each worker.
	PerWorker map[string]int `json:"perWorker"`
}

func outcomesOf(jobs []Job) Outcomes {
	o := Outcomes{ByReason: map[string]int{}, PerWorker: map[string]int{}}
	for _, j := range jobs {
		switch {
		case j.Refused != "":
			o.Refused++
			continue
		case j.Finished.IsZero():
			o.Unfinished++
		default:
			o.Finished++
			o.ByReason[j.Reason]++
		}
		o.Submitted++
		if len(j.Copies) > 1 {
			o.Redispached++
		}
		if c := finalCopy(j); c != nil {
			o.PerWorker[c.Worker]++
		}
	}
	return o
}

// write saves soak.json and timeline.png, prints the faults and the
// invariants, and returns an error naming the invariants that failed.
func (r *Report) write(dir string, out io.Writer) error {
	r.Courier = benchreport.BinaryVersion(filepath.Join(r.Options.Bin, "courier"))
	r.Outcomes = outcomesOf(r.Jobs)
	path := filepath.Join(dir, "soak.json")
	jsonErr := benchreport.WriteJSON(path, r)
	png := filepath.Join(dir, "timeline.png")
	plotErr := plotTimeline(r, png)

	fmt.Fprintf(out, "\nFaults (%d):\n", len(r.Faults))
	for _, f := range r.Faults {
		status := "ok"
		if f.Error != "" {
			status = "ERROR " + f.Error
		}
		fmt.Fprintf(out, "  %-8s %-24s %-9s %-9s %s: %s\n", f.At, f.Kind, f.Target, f.Restored.Sub(f.Started).Round(time.Second), status, f.Note)
	}
	o := r.Outcomes
	fmt.Fprintf(out, "\nJobs: %d submitted, %d finished %v, %d unfinished, %d refused at submission, %d dispatched more than once; final copies per worker %v\n",
		o.Submitted, o.Finished, o.ByReason, o.Unfinished, o.Refused, o.Redispached, o.PerWorker)
	fmt.Fprintf(out, "\nGround truth, from each worker's own API server (lost-worker policy %s, workerLostTimeout %s): %s\n",
		r.LostWorkerPolicy, r.WorkerLostTimeout, overlapSummary(r.Overlaps))
	if len(r.RanAgain) > 0 {
		fmt.Fprintf(out, "%d jobs ran again after one of their pods had succeeded:\n", len(r.RanAgain))
		for i, a := range r.RanAgain {
			if i == 10 {
				fmt.Fprintf(out, "      ... %d more in %s\n", len(r.RanAgain)-i, path)
				break
			}
			fmt.Fprintf(out, "      %s\n", a)
		}
	}
	fmt.Fprintln(out, "\nInvariants:")
	var failed []string
	for _, inv := range r.Invariants {
		status := "PASS"
		switch {
		case !inv.Pass:
			status = "FAIL"
			failed = append(failed, inv.Name)
		case len(inv.Unpromised) > 0:
			status = "NOT PROMISED"
		}
		fmt.Fprintf(out, "%s  %s\n", status, inv.Name)
		printAtMost(out, inv.Offenders, path)
		printAtMost(out, inv.Unpromised, path)
		for _, n := range inv.Notes {
			fmt.Fprintf(out, "      note: %s\n", n)
		}
	}
	fmt.Fprintf(out, "\nreport: %s\ntimeline: %s\nsoak took %s\n", path, png, r.Ended.Sub(r.Began).Round(time.Second))
	var err error
	if len(failed) > 0 {
		slices.Sort(failed)
		err = fmt.Errorf("%d invariants failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return errors.Join(err, jsonErr, plotErr)
}

// printAtMost prints the first ten lines and counts the rest, which path
// holds.
func printAtMost(out io.Writer, lines []string, path string) {
	for i, l := range lines {
		if i == 10 {
			fmt.Fprintf(out, "      ... %d more in %s\n", len(lines)-i, path)
			return
		}
		fmt.Fprintf(out, "      %s\n", l)
	}
}
