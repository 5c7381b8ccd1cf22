package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// report is a command's result: printed as a table, or as JSON or YAML
// through its json tags, which are the stable interface for scripts.
type report interface {
	table(w io.Writer, now time.Time)
}

// Output formats.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

func checkOutput(format string) error {
	switch format {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("--output %q is not a format kubectl courier prints; use table, json or yaml", format)
}

// printReport writes a report in a format checked by checkOutput.
func printReport(w io.Writer, format string, r report, now time.Time) error {
	var data []byte
	var err error
	switch format {
	case outputJSON:
		data, err = json.MarshalIndent(r, "", "  ")
		data = append(data, '\n')
	case outputYAML:
		data, err = yaml.Marshal(r)
	default:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		r.table(tw, now)
		return tw.Flush()
	}
	if err != nil {
		return fmt.Errorf("encoding the report as %s: %w", format, err)
	}
	_, err = w.Write(data)
	return err
}

func (r *StatusReport) table(w io.Writer, now time.Time) {
	row(w, "JOB:", r.Job.String())
	if r.Workload != "" {
		row(w, "WORKLOAD:", r.Workload, joinNonEmpty(" - ", r.WorkloadState, r.WorkloadMessage))
	}
	row(w, "WHERE:", r.Summary)
	if r.Check != nil {
		row(w, "CHECK:", r.Check.Name, joinNonEmpty(" - ", r.Check.State, r.Check.Message))
	} else if r.Workload != "" {
		row(w, "CHECK:", "none of Courier's on the Workload")
	}
	if ws := r.Worker; ws != nil {
		row(w, "WORKER:", ws.Cluster, workerLine(ws))
	}
	if r.JobState != "" {
		row(w, "JOB STATUS:", joinNonEmpty(" - ", r.JobState, oneLine(r.JobMessage)))
	}
	for _, n := range r.Notes {
		row(w, "NOTE:", n)
	}
	fmt.Fprintln(w)
	if len(r.Events) == 0 {
		fmt.Fprintln(w, "No events.")
		return
	}
	row(w, "CLUSTER", "OBJECT", "TYPE", "REASON", "AGE", "MESSAGE")
	for _, e := range r.Events {
		row(w, e.Cluster, e.Object, e.Type, e.Reason, age(e.Last.Time, now), oneLine(e.Message))
	}
}

// workerLine says how Courier reaches a worker, from its WorkerCluster.
func workerLine(ws *WorkerStatus) string {
	if !ws.Found {
		return "no such WorkerCluster"
	}
	state := "Active"
	if ws.Active != string(metav1.ConditionTrue) {
		state = "not Active"
	}
	if ws.Draining {
		state += ", draining"
	}
	return joinNonEmpty(" - ", joinNonEmpty(" ", state, parens(ws.Reason)), oneLine(ws.Message))
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func (r *ClustersReport) table(w io.Writer, _ time.Time) {
	if len(r.Clusters) == 0 {
		fmt.Fprintln(w, "No WorkerClusters.")
		return
	}
	row(w, "NAME", "ACTIVE", "REASON", "DRAINING", "PLACED", "WAITING", "CAPACITY")
	for _, c := range r.Clusters {
		row(w, c.Name, c.Active, dash(c.Reason), yesNo(c.Draining), strconv.Itoa(c.Jobs.Placed), strconv.Itoa(c.Jobs.Waiting), dash(c.Capacity))
	}
}

func (r *ExplainReport) table(w io.Writer, _ time.Time) {
	row(w, "JOB:", r.Job.String())
	if r.Workload != "" {
		row(w, "WORKLOAD:", r.Workload)
	}
	if r.Check != nil {
		row(w, "CHECK:", r.Check.Name, joinNonEmpty(" - ", r.Check.State, r.Check.Message))
	}
	row(w, "WHY:", r.Why)
	if p := r.Policy; p != nil {
		row(w, "POLICY:", p.Name, "strategy "+p.Strategy, "clusters "+dash(strings.Join(p.Clusters, ",")))
		if p.Filter != "" {
			row(w, "FILTER:", oneLine(p.Filter))
		}
		if p.Score != "" {
			row(w, "SCORE:", oneLine(p.Score))
		}
	}
	if len(r.Workers) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "WORKER", "ELIGIBLE", "ROOM NOW", "NOMINATED", "REASON")
	for _, v := range r.Workers {
		row(w, v.Name, yesNo(v.Eligible), roomNow(v), yesNo(v.Nominated), dash(oneLine(v.Reason)))
	}
}

// roomNow is unknown for a worker passed over before its room was asked.
func roomNow(v WorkerVerdict) string {
	if !v.Eligible {
		return "-"
	}
	return yesNo(v.RoomNow)
}

// row writes tab-separated cells as one table line.
func row(w io.Writer, cells ...string) {
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// oneLine keeps a table row on one line: messages and CEL may span
// several.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// age is how long ago t was, as kubectl prints ages.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
