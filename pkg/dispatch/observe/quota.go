package observe

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/quota"
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
	o.NothingWaitsForQuota = !quotaWanted(quota.Held(wl.Status.Admission), own, cohort)
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

// quotaWanted reports whether quota held in own may be wanted by a
// Workload that waits: own, or a ClusterQueue that may borrow it, has
// Workloads pending and less of a resource it holds left under its
// nominal quota than the holder has, so that a Workload its size would
// not fit. Any ClusterQueue in a cohort counts, as cohorts may nest and
// borrow through their parents; a ClusterQueue alone lends to none.
func quotaWanted(held quota.Amounts, own *kueue.ClusterQueue, cohort []kueue.ClusterQueue) bool {
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
func tight(held quota.Amounts, cq *kueue.ClusterQueue) bool {
	if cq.Status.PendingWorkloads == 0 {
		return false
	}
	reserved := quota.Reserved(cq)
	for fr, amount := range held {
		if q, ok := quota.Of(cq, fr); ok && reserved[fr]+amount > q.NominalQuota.MilliValue() {
			return true
		}
	}
	return false
}
