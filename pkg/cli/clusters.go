package cli

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// ClustersReport is what kubectl courier clusters shows.
type ClustersReport struct {
	metav1.TypeMeta `json:",inline"`
	Clusters        []ClusterSummary `json:"clusters"`
}

// ClusterSummary is one WorkerCluster: its connection, capacity and jobs.
type ClusterSummary struct {
	Name string `json:"name"`
	// Active is the Active condition's status (True, False, Unknown), and
	// Reason and Message its reason and message.
	Active            string                     `json:"active"`
	Reason            string                     `json:"reason,omitempty"`
	Message           string                     `json:"message,omitempty"`
	Draining          bool                       `json:"draining,omitempty"`
	KubernetesVersion string                     `json:"kubernetesVersion,omitempty"`
	UnavailableKinds  []string                   `json:"unavailableKinds,omitempty"`
	Capacity          string                     `json:"capacity,omitempty"`
	Resources         []courier.ResourceCapacity `json:"resources,omitempty"`
	Conditions        []metav1.Condition         `json:"conditions,omitempty"`
	Jobs              JobCounts                  `json:"jobs"`
}

// JobCounts are the manager Workloads, not finished, on a worker.
type JobCounts struct {
	// Placed are placed there for their current admission.
	Placed int `json:"placed"`
	// Waiting wait with a copy there, not placed anywhere yet.
	Waiting int `json:"waiting"`
}

func gatherClusters(ctx context.Context, c *clients) (report, error) {
	workers := &courier.WorkerClusterList{}
	if err := c.manager.List(ctx, workers); err != nil {
		return nil, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	workloads := &kueue.WorkloadList{}
	if err := c.manager.List(ctx, workloads); err != nil {
		return nil, fmt.Errorf("listing Workloads: %w", err)
	}
	return summarizeClusters(workers.Items, workloads.Items), nil
}

// summarizeClusters sums up each WorkerCluster, with the manager
// Workloads placed on or waiting on it, by name.
func summarizeClusters(workers []courier.WorkerCluster, workloads []kueue.Workload) *ClustersReport {
	counts := countJobs(workloads)
	r := &ClustersReport{Clusters: make([]ClusterSummary, 0, len(workers))}
	for i := range workers {
		wc := &workers[i]
		s := ClusterSummary{
			Name:              wc.Name,
			Active:            string(metav1.ConditionUnknown),
			KubernetesVersion: wc.Status.KubernetesVersion,
			UnavailableKinds:  wc.Status.UnavailableKinds,
			Capacity:          wc.Status.CapacitySummary,
			Resources:         wc.Status.Capacity,
			Conditions:        wc.Status.Conditions,
			Jobs:              counts[wc.Name],
		}
		if active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive); active != nil {
			s.Active, s.Reason, s.Message = string(active.Status), active.Reason, active.Message
		}
		s.Draining = wc.DeletionTimestamp != nil || meta.IsStatusConditionTrue(wc.Status.Conditions, courier.WorkerClusterDraining)
		r.Clusters = append(r.Clusters, s)
	}
	return r
}

// countJobs counts the unfinished Workloads per worker: placed there (a
// live placement), or waiting with a copy there.
func countJobs(workloads []kueue.Workload) map[string]JobCounts {
	out := map[string]JobCounts{}
	for i := range workloads {
		wl := &workloads[i]
		if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		loc := locate(wl)
		if loc.Live {
			n := out[loc.Cluster]
			n.Placed++
			out[loc.Cluster] = n
			continue
		}
		for _, name := range loc.Nominated {
			n := out[name]
			n.Waiting++
			out[name] = n
		}
	}
	return out
}
