package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// StatusReport is what kubectl courier status shows of a job.
type StatusReport struct {
	Job JobRef `json:"job"`
	// Workload is the manager Workload's name, empty when Kueue has made
	// none yet.
	Workload string `json:"workload,omitempty"`
	// WorkloadState is the manager Workload's state (Pending,
	// QuotaReserved, Admitted, Evicted, Finished) and message.
	WorkloadState   string `json:"workloadState,omitempty"`
	WorkloadMessage string `json:"workloadMessage,omitempty"`
	Location
	Check *CheckStatus `json:"check,omitempty"`
	// Remote is the Workload copy on the worker the job is placed on.
	Remote *RemoteStatus `json:"remote,omitempty"`
	Events []Event       `json:"events"`
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

// RemoteStatus is the Workload copy on a worker.
type RemoteStatus struct {
	Cluster string `json:"cluster"`
	// Found is false when the worker holds no copy.
	Found   bool   `json:"found"`
	State   string `json:"state,omitempty"`
	Message string `json:"message,omitempty"`
	// JobFound says whether the job copy exists there.
	JobFound bool `json:"jobFound"`
	// Error says why the worker could not be read.
	Error string `json:"error,omitempty"`
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
	evs, note, err := listEvents(ctx, c.manager, managerSide, objs, events)
	if err != nil {
		return nil, err
	}
	r.Events, r.Notes = append(r.Events, evs...), appendNote(r.Notes, note)
	if r.Cluster == "" || !r.Live {
		return r, nil
	}
	r.Remote = &RemoteStatus{Cluster: r.Cluster}
	worker, err := c.connect(ctx, r.Cluster)
	if err != nil {
		r.Remote.Error = err.Error()
		return r, nil
	}
	if err := readRemote(ctx, worker, t, r.Remote); err != nil {
		r.Remote.Error = err.Error()
		return r, nil
	}
	evs, note, err = listEvents(ctx, worker, r.Cluster, objs, events)
	if err != nil {
		r.Remote.Error = err.Error()
		return r, nil
	}
	r.Events, r.Notes = append(r.Events, evs...), appendNote(r.Notes, note)
	return r, nil
}

// readRemote reads the Workload and job copies on a worker, which have the
// manager's names.
func readRemote(ctx context.Context, worker client.Client, t *target, into *RemoteStatus) error {
	wl := &kueue.Workload{}
	err := worker.Get(ctx, client.ObjectKeyFromObject(t.workload), wl)
	switch {
	case err == nil:
		into.Found = true
		into.State, into.Message = workloadState(wl)
	case client.IgnoreNotFound(err) != nil:
		return fmt.Errorf("getting the Workload copy on %s: %w", into.Cluster, err)
	}
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(t.job.GroupVersionKind())
	err = worker.Get(ctx, client.ObjectKeyFromObject(t.job), job)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("getting the %s copy on %s: %w", t.ref.Kind, into.Cluster, err)
	}
	into.JobFound = err == nil
	return nil
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
