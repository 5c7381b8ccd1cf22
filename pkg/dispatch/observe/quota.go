package observe

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// observeQuotaWait tells the planner, once a copy of the job has ended and
// until the Workload is finished, whether anything on the manager waits
// for the quota the Workload holds: while nothing does, releasing it
// before the manager's Kueue finishes the Workload gains nothing, and the
// write is saved.
func (ob *Observer) observeQuotaWait(ctx context.Context, res *Result) error {
	o := &res.Observed
	wl := o.Workload
	if wl.Status.Admission == nil || !anyCopyEnded(res) || meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return nil
	}
	own := &kueue.ClusterQueue{}
	if err := ob.Client.Get(ctx, client.ObjectKey{Name: string(wl.Status.Admission.ClusterQueue)}, own); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // No ClusterQueue to read: the quota counts as wanted.
		}
		return fmt.Errorf("reading ClusterQueue %q: %w", wl.Status.Admission.ClusterQueue, err)
	}
	var cohort []kueue.ClusterQueue
	if own.Spec.CohortName != "" {
		all := &kueue.ClusterQueueList{}
		if err := ob.Client.List(ctx, all, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing ClusterQueues: %w", err)
		}
		cohort = all.Items
	}
	o.NothingWaitsForQuota = !quotaWanted(heldQuota(wl.Status.Admission), own, cohort)
	return nil
}

// anyCopyEnded reports whether a job copy shows the job's end: only then
// may the planner finish the Workload, so only then is the quota read.
func anyCopyEnded(res *Result) bool {
	for _, r := range res.Observed.Remotes {
		if r.JobOutcome.Finished {
			return true
		}
	}
	return false
}

// flavorResource is one resource of one ResourceFlavor.
type flavorResource struct {
	flavor   kueue.ResourceFlavorReference
	resource corev1.ResourceName
}

// heldQuota is how much of each flavor's resources an admission holds,
// summed over its pod sets.
func heldQuota(adm *kueue.Admission) map[flavorResource]resource.Quantity {
	held := map[flavorResource]resource.Quantity{}
	for _, ps := range adm.PodSetAssignments {
		for name, flavor := range ps.Flavors {
			q, ok := ps.ResourceUsage[name]
			if !ok || q.IsZero() {
				continue
			}
			key := flavorResource{flavor, name}
			sum := held[key]
			sum.Add(q)
			held[key] = sum
		}
	}
	return held
}

// quotaWanted reports whether quota held in own may be wanted by a
// Workload that waits: own, or a ClusterQueue that may borrow it, has
// Workloads pending and less of a resource it holds left under its
// nominal quota than the holder has, so that a Workload its size would
// not fit. Any ClusterQueue in a cohort counts, as cohorts may nest and
// borrow through their parents; a ClusterQueue alone lends to none.
func quotaWanted(held map[flavorResource]resource.Quantity, own *kueue.ClusterQueue, cohort []kueue.ClusterQueue) bool {
	if tight(held, own) {
		return true
	}
	if own.Spec.CohortName == "" {
		return false
	}
	for i := range cohort {
		if cq := &cohort[i]; cq.Name != own.Name && cq.Spec.CohortName != "" && tight(held, cq) {
			return true
		}
	}
	return false
}

// tight reports whether cq has Workloads pending and, for some resource of
// held, less unreserved nominal quota than held has of it.
func tight(held map[flavorResource]resource.Quantity, cq *kueue.ClusterQueue) bool {
	if cq.Status.PendingWorkloads == 0 {
		return false
	}
	reserved := map[flavorResource]resource.Quantity{}
	for _, f := range cq.Status.FlavorsReservation {
		for _, r := range f.Resources {
			reserved[flavorResource{f.Name, r.Name}] = r.Total
		}
	}
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				key := flavorResource{f.Name, r.Name}
				amount, ok := held[key]
				if !ok {
					continue
				}
				need := reserved[key]
				need.Add(amount)
				if need.Cmp(r.NominalQuota) > 0 {
					return true
				}
			}
		}
	}
	return false
}
