package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// StatusReport is what kubectl courier status shows of a job.
type StatusReport struct {
	metav1.TypeMeta `json:",inline"`
	Job             JobRef `json:"job"`
	// Workload is the manager Workload's name, empty when Kueue has made
	// none yet.
	Workload string `json:"workload,omitempty"`
	// WorkloadState is the manager Workload's state (Pending,
	// QuotaReserved, Admitted, Evicted, Finished) and message.
	WorkloadState   string `json:"workloadState,omitempty"`
	WorkloadMessage string `json:"workloadMessage,omitempty"`
	Location
	Check *CheckStatus `json:"check,omitempty"`
	// Worker is the WorkerCluster of the worker the job is placed on.
	Worker *WorkerStatus `json:"worker,omitempty"`
	// JobState is the job's own status, which Courier mirrors from its
	// copy on the worker: its latest condition, as its type when true and
	// "not <type>" when false, and that condition's reason and message.
	JobState   string  `json:"jobState,omitempty"`
	JobMessage string  `json:"jobMessage,omitempty"`
	Events     []Event `json:"events"`
	// Notes say what could not be read, and why.
	Notes []string `json:"notes,omitempty"`
}

// Location is where the job is, from Courier's placement record and the
// manager Workload's status.
type Location struct {
	// Cluster is the worker the job is placed on, empty while it waits.
	Cluster string `json:"cluster,omitempty"`
	// Live is false for a placement of an admission before the last
	// eviction: the job left that worker, or its copies are still being
	// removed there before it goes anywhere again.
	Live bool `json:"live,omitempty"`
	// Nominated are the workers holding a Workload copy while the job
	// waits.
	Nominated []string `json:"nominated,omitempty"`
	// Summary says it in words.
	Summary string `json:"summary"`
}

// WorkerStatus is a worker as its WorkerCluster's status on the manager
// shows it: the plugin never reaches the worker itself, so it needs no
// access to the workers' credentials.
type WorkerStatus struct {
	Cluster string `json:"cluster"`
	// Found is false when no WorkerCluster has that name.
	Found bool `json:"found"`
	// Active is the Active condition's status (True, False, Unknown), and
	// Reason and Message its reason and message.
	Active   string `json:"active,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	Draining bool   `json:"draining,omitempty"`
}

func gatherStatus(ctx context.Context, c *clients, arg string, events int) (*StatusReport, error) {
	t, err := findTarget(ctx, c, arg)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{Job: t.ref, Events: []Event{}}
	objs := []objectKey{{kind: t.ref.Kind, namespace: t.ref.Namespace, name: t.ref.Name}}
	wl := t.workload
	if wl == nil {
		r.Summary = "No Workload yet: Kueue has not taken the job. Check its kueue.x-k8s.io/queue-name label and that the LocalQueue exists."
	} else {
		r.Workload = wl.Name
		r.WorkloadState, r.WorkloadMessage = workloadState(wl)
		objs = append(objs, objectKey{kind: "Workload", namespace: wl.Namespace, name: wl.Name})
		if r.Check, err = courierCheck(ctx, c.manager, wl); err != nil {
			return nil, err
		}
		r.Location = locate(wl)
	}
	r.JobState, r.JobMessage = jobState(t.job)
	evs, note, err := listEvents(ctx, c.manager, managerSide, objs, events)
	if err != nil {
		return nil, err
	}
	r.Events, r.Notes = append(r.Events, evs...), appendNote(r.Notes, note)
	if r.Cluster != "" && r.Live {
		if r.Worker, err = workerStatus(ctx, c.manager, r.Cluster); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// workerStatus reads a worker's WorkerCluster on the manager.
func workerStatus(ctx context.Context, manager client.Client, name string) (*WorkerStatus, error) {
	ws := &WorkerStatus{Cluster: name}
	wc := &courier.WorkerCluster{}
	err := manager.Get(ctx, client.ObjectKey{Name: name}, wc)
	switch {
	case apierrors.IsNotFound(err):
		return ws, nil
	case err != nil:
		return nil, fmt.Errorf("getting WorkerCluster %s: %w", name, err)
	}
	ws.Found, ws.Active = true, string(metav1.ConditionUnknown)
	if active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive); active != nil {
		ws.Active, ws.Reason, ws.Message = string(active.Status), active.Reason, active.Message
	}
	ws.Draining = wc.DeletionTimestamp != nil || meta.IsStatusConditionTrue(wc.Status.Conditions, courier.WorkerClusterDraining)
	return ws, nil
}

// jobState sums up a job's status conditions, which Courier mirrors from
// its copy on the worker: the condition that changed last, its type when
// true, "not <type>" when false, with its reason and message; empty
// without conditions. A true condition wins a tie: it says more.
func jobState(job *unstructured.Unstructured) (string, string) {
	raw, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	var latest *metav1.Condition
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		c := metav1.Condition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil || c.Status == metav1.ConditionUnknown {
			continue
		}
		switch {
		case latest == nil, latest.LastTransitionTime.Before(&c.LastTransitionTime):
			latest = &c
		case c.LastTransitionTime.Equal(&latest.LastTransitionTime) && c.Status == metav1.ConditionTrue:
			latest = &c
		}
	}
	if latest == nil {
		return "", ""
	}
	state := latest.Type
	if latest.Status == metav1.ConditionFalse {
		state = "not " + state
	}
	return state, joinNonEmpty(": ", latest.Reason, latest.Message)
}

// locate says where a Workload's job is: on the worker of Courier's
// placement record while it is live (recorded for the Workload's current
// admission, as the dispatcher counts Kueue's evictions), on
// status.clusterName without a record, or nowhere yet.
func locate(wl *kueue.Workload) Location {
	p := Location{Nominated: wl.Status.NominatedClusterNames}
	raw, recorded := wl.Annotations[courier.PlacementAnnotation]
	record := workload.Placement{}
	if recorded {
		if err := json.Unmarshal([]byte(raw), &record); err != nil || record.Cluster == "" {
			p.Summary = fmt.Sprintf("The annotation %s=%q is not a placement Courier wrote; Courier ignores it.", courier.PlacementAnnotation, raw)
			return p
		}
	}
	switch {
	case recorded && record.Evictions == workload.Evictions(wl):
		p.Cluster, p.Live = record.Cluster, true
		p.Summary = "Placed on " + record.Cluster + "."
	case recorded:
		p.Cluster = record.Cluster
		p.Summary = fmt.Sprintf("Was placed on %s before its last eviction; its copies there go before it is dispatched again.", record.Cluster)
	case wl.Status.ClusterName != nil:
		p.Cluster, p.Live = *wl.Status.ClusterName, true
		p.Summary = "Placed on " + p.Cluster + "."
	case len(p.Nominated) > 0:
		p.Summary = "Waiting for a worker's Kueue to admit it; copies on " + strings.Join(p.Nominated, ", ") + "."
	default:
		p.Summary = "Not sent to any worker yet."
	}
	return p
}

func appendNote(notes []string, note string) []string {
	if note == "" {
		return notes
	}
	return append(notes, note)
}
