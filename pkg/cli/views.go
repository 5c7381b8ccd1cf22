package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// The human views of the reports, and the objects -o name names.

func (r *StatusReport) human(w io.Writer, out *output) error {
	f := newDetail(w)
	f.row("JOB:", r.Job.String())
	if r.Workload != "" {
		f.row("WORKLOAD:", r.Workload, joinNonEmpty(" - ", r.WorkloadState, r.WorkloadMessage))
	}
	f.row("WHERE:", r.Summary)
	if r.Check != nil {
		f.row("CHECK:", r.Check.Name, joinNonEmpty(" - ", r.Check.State, r.Check.Message))
	} else if r.Workload != "" {
		f.row("CHECK:", "none of Courier's on the Workload")
	}
	if ws := r.Worker; ws != nil {
		f.row("WORKER:", ws.Cluster, workerLine(ws))
	}
	if r.JobState != "" {
		f.row("JOB STATUS:", joinNonEmpty(" - ", r.JobState, oneLine(r.JobMessage)))
	}
	for _, n := range r.Notes {
		f.row("NOTE:", n)
	}
	if err := f.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(r.Events) == 0 {
		_, err := fmt.Fprintln(w, "No events.")
		return err
	}
	t := &metav1.Table{ColumnDefinitions: columns([]string{"Object", "Type", "Reason", "Age", "Message"}, "Count")}
	for _, e := range r.Events {
		t.Rows = append(t.Rows, tableRow(nil, e.Object, e.Type, e.Reason, age(e.Last.Time, out.now), oneLine(e.Message), strconv.Itoa(int(e.Count))))
	}
	return out.table(w, t)
}

func (r *StatusReport) named() []runtime.Object { return []runtime.Object{r.Job.object()} }

func (r *StatusReport) DeepCopyObject() runtime.Object { return deepCopy(r) }

func (r *JobsReport) human(w io.Writer, out *output) error {
	if len(r.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "No jobs with a Courier admission check.")
		return err
	}
	t := &metav1.Table{ColumnDefinitions: columns([]string{"Job", "Workload", "State", "Check", "Where", "Age"}, "Nominated", "Message")}
	for _, j := range r.Jobs {
		t.Rows = append(t.Rows, tableRow(j.Job.object(), j.Job.short(), j.Workload, j.WorkloadState, j.Check.State, where(j.Location),
			age(j.Created.Time, out.now), dash(strings.Join(j.Location.Nominated, ",")), dash(oneLine(j.Check.Message))))
	}
	return out.table(w, t)
}

func (r *JobsReport) named() []runtime.Object {
	out := make([]runtime.Object, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		out = append(out, j.Job.object())
	}
	return out
}

func (r *JobsReport) DeepCopyObject() runtime.Object { return deepCopy(r) }

// where says in a word where a job is, for a table cell.
func where(l Location) string {
	switch {
	case l.Live:
		return l.Cluster
	case len(l.Nominated) > 0:
		return "waiting"
	case l.Cluster != "":
		return "leaving " + l.Cluster
	}
	return "-"
}

func (r *ClustersReport) human(w io.Writer, out *output) error {
	if len(r.Clusters) == 0 {
		_, err := fmt.Fprintln(w, "No WorkerClusters.")
		return err
	}
	t := &metav1.Table{ColumnDefinitions: columns([]string{"Name", "Active", "Reason", "Draining", "Placed", "Waiting", "Capacity"},
		"Kubernetes", "Unavailable", "Message")}
	for _, c := range r.Clusters {
		t.Rows = append(t.Rows, tableRow(nil, c.Name, c.Active, dash(c.Reason), yesNo(c.Draining), strconv.Itoa(c.Jobs.Placed), strconv.Itoa(c.Jobs.Waiting),
			dash(c.Capacity), dash(c.KubernetesVersion), dash(strings.Join(c.UnavailableKinds, ",")), dash(oneLine(c.Message))))
	}
	return out.table(w, t)
}

func (r *ClustersReport) named() []runtime.Object {
	out := make([]runtime.Object, 0, len(r.Clusters))
	for _, c := range r.Clusters {
		out = append(out, object(courier.GroupVersion.WithKind("WorkerCluster"), "", c.Name))
	}
	return out
}

func (r *ClustersReport) DeepCopyObject() runtime.Object { return deepCopy(r) }

func (r *ExplainReport) human(w io.Writer, out *output) error {
	f := newDetail(w)
	f.row("JOB:", r.Job.String())
	if r.Workload != "" {
		f.row("WORKLOAD:", r.Workload)
	}
	if r.Check != nil {
		f.row("CHECK:", r.Check.Name, joinNonEmpty(" - ", r.Check.State, r.Check.Message))
	}
	f.row("WHY:", r.Why)
	if p := r.Policy; p != nil {
		f.row("POLICY:", p.Name, "strategy "+p.Strategy, "clusters "+dash(strings.Join(p.Clusters, ",")))
		if p.Filter != "" {
			f.row("FILTER:", oneLine(p.Filter))
		}
		if p.Score != "" {
			f.row("SCORE:", oneLine(p.Score))
		}
	}
	if err := f.flush(); err != nil || len(r.Workers) == 0 {
		return err
	}
	fmt.Fprintln(w)
	t := &metav1.Table{ColumnDefinitions: columns([]string{"Worker", "Eligible", "Room now", "Nominated", "Reason"}, "Capacity")}
	for _, v := range r.Workers {
		t.Rows = append(t.Rows, tableRow(nil, v.Name, yesNo(v.Eligible), roomNow(v), yesNo(v.Nominated), dash(oneLine(v.Reason)), dash(v.Capacity)))
	}
	return out.table(w, t)
}

func (r *ExplainReport) named() []runtime.Object { return []runtime.Object{r.Job.object()} }

func (r *ExplainReport) DeepCopyObject() runtime.Object { return deepCopy(r) }

// roomNow is unknown for a worker passed over before its room was asked.
func roomNow(v WorkerVerdict) string {
	if !v.Eligible {
		return "-"
	}
	return yesNo(v.RoomNow)
}

func (r *VersionReport) human(w io.Writer, _ *output) error {
	_, err := fmt.Fprintf(w, "kubectl-courier %s\n", r.Client)
	return err
}

func (r *VersionReport) named() []runtime.Object { return nil }

func (r *VersionReport) DeepCopyObject() runtime.Object { return deepCopy(r) }

// object is the job as -o name names it, and as -A finds its namespace.
func (j JobRef) object() runtime.Object {
	return object(schema.FromAPIVersionAndKind(j.APIVersion, j.Kind), j.Namespace, j.Name)
}

// short names the job in a table cell, as kind/name.
func (j JobRef) short() string { return strings.ToLower(j.Kind) + "/" + j.Name }

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
