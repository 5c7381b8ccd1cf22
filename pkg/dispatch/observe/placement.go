package observe

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// placementInput is what the planner decides on for wl: the policy, the
// workload's pod sets and job, and each candidate with its labels, why it
// cannot take the job if so, and the room its worker's ClusterQueue for the
// workload's LocalQueue offers.
func (ob *Observer) placementInput(wl *kueue.Workload, info workload.Job, policy placement.Policy, o plan.Observed, workers map[string]*courier.WorkerCluster, seen *expect.Seen) placement.Input {
	in := placement.Input{
		Policy: policy,
		Workload: placement.Workload{
			Namespace: wl.Namespace,
			Queue:     string(wl.Spec.QueueName),
			Priority:  ptr.Deref(wl.Spec.Priority, 0),
			Labels:    wl.Labels,
		},
		Started:     workload.WaitingSince(wl, o.Now),
		RoundsSince: ob.roundsSince(wl, o.Now, seen),
		Now:         o.Now,
		Nominated:   nominatedBefore(wl, o.Remotes),
	}
	in.Workload.PodSets = workload.PodSets(wl)
	if info.Obj != nil {
		in.Workload.Object = info.Obj.Object
	}
	for _, c := range o.Candidates {
		pc := placement.Cluster{Name: c.Name, Unusable: cmp.Or(c.Refuses, c.Unusable)}
		if wc := workers[c.Name]; wc != nil {
			pc.Labels = wc.Labels
		}
		if remote, err := ob.Remotes.Get(c.Name); err == nil {
			pc.Capacity = ob.capacityFor(remote, wl, o.Now, seen)
			pc.PreemptionGates = remote.PreemptionGates()
		}
		in.Clusters = append(in.Clusters, pc)
	}
	return in
}

// nominatedBefore are the clusters nominated before: those the Workload
// names, and those holding a live copy of it that it does not name. A pass
// whose nomination was refused leaves its copies behind; the next pass
// keeps them where they are instead of moving them because their own
// admission used up their worker's room.
func nominatedBefore(wl *kueue.Workload, remotes map[string]plan.Remote) []string {
	named := wl.Status.NominatedClusterNames
	var held []string
	for name, r := range remotes {
		if r.Workload != nil && r.Workload.DeletionTimestamp == nil && !r.Stale && !slices.Contains(named, name) {
			held = append(held, name)
		}
	}
	if len(held) == 0 {
		return named
	}
	return slices.Sorted(slices.Values(append(slices.Clone(named), held...)))
}

// capacityFor is the room a worker's ClusterQueue for wl's LocalQueue
// offers wl: its own waiting copy is no demand against it, and the copies
// Courier created there that the snapshot does not show yet are.
// Copies the snapshot shows go to seen, if not nil, for the act step to
// stop assuming.
func (ob *Observer) capacityFor(remote *cluster.Remote, wl *kueue.Workload, now time.Time, seen *expect.Seen) placement.Capacity {
	return remote.CapacityFor(wl.Namespace, string(wl.Spec.QueueName), wl.UID, func(shown func(types.UID) bool) []placement.PodSet {
		podSets, shownUIDs := ob.Expectations.Assumed(remote.Name, workload.Queue(wl), wl.UID, now, shown)
		if seen != nil {
			for _, uid := range shownUIDs {
				seen.Shown = append(seen.Shown, expect.Assumption{Cluster: remote.Name, Workload: uid})
			}
		}
		return podSets
	})
}

// roundsSince is when the rounds of wl started: when Courier first saw it
// nominated, or now while it is not, which ends the rounds of an earlier
// admission. Rounds start again after a restart, while maxWaitTime still
// counts from the quota reservation.
func (ob *Observer) roundsSince(wl *kueue.Workload, now time.Time, seen *expect.Seen) time.Time {
	if len(wl.Status.NominatedClusterNames) == 0 {
		seen.Rounds = &expect.Rounds{Workload: wl.UID, End: true}
		return now
	}
	if at, ok := ob.Expectations.RoundsStart(wl.UID, now); ok {
		return at
	}
	seen.Rounds = &expect.Rounds{Workload: wl.UID, At: now}
	return now
}

// CapacityFor is the room a worker's ClusterQueue for wl's LocalQueue
// offers wl now, for callers outside a pass.
func (ob *Observer) CapacityFor(remote *cluster.Remote, wl *kueue.Workload, now time.Time) placement.Capacity {
	return ob.capacityFor(remote, wl, now, nil)
}
