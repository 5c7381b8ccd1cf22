// Package workload is what the dispatcher knows of a manager Workload and
// of the objects Courier creates for it on workers: the placement record
// on the Workload, its admission, its demand, and how a worker's object is
// told to be Courier's copy of it. Observe, plan and act share it.
package workload

import (
	"encoding/json"
	"fmt"
	"slices"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Placement is a recorded choice of worker for one admission of the
// Workload, identified by Kueue's eviction count when it was made.
type Placement struct {
	Cluster   string `json:"cluster"`
	Evictions int32  `json:"evictions"`
}

// PlacementOf reads the placement recorded on a manager Workload, nil if
// there is none. A record that does not parse was not written by Courier;
// the error says so.
func PlacementOf(wl *kueue.Workload) (*Placement, error) {
	raw, ok := wl.Annotations[courier.PlacementAnnotation]
	if !ok {
		return nil, nil
	}
	p := &Placement{}
	if err := json.Unmarshal([]byte(raw), p); err != nil || p.Cluster == "" {
		return nil, fmt.Errorf("annotation %s=%q is not a placement Courier wrote; remove it", courier.PlacementAnnotation, raw)
	}
	return p, nil
}

// Evictions is Kueue's count of a Workload's evictions, whatever their
// reason: a placement recorded at a lower count belongs to an earlier
// admission.
func Evictions(wl *kueue.Workload) int32 {
	var n int32
	if s := wl.Status.SchedulingStats; s != nil {
		for _, e := range s.Evictions {
			n += e.Count
		}
	}
	return n
}

// Clusters lists, sorted, the clusters a Workload is placed on,
// dispatched to or nominated for.
func Clusters(wl *kueue.Workload) []string {
	keys := slices.Clone(wl.Status.NominatedClusterNames)
	if wl.Status.ClusterName != nil {
		keys = append(keys, *wl.Status.ClusterName)
	}
	if p, err := PlacementOf(wl); err == nil && p != nil {
		keys = append(keys, p.Cluster)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
