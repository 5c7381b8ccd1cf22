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
	o.NothingWaitsForQuota = !quota.Wanted(quota.Held(wl.Status.Admission), own, cohort)
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

// LeftToKueue reports, from the cache, whether wl may be a Workload the
// planner leaves to the manager's Kueue to finish: Courier's check on it is
// Ready and its job on the manager shows its end. Such a Workload is
// Courier's to finish once something waits for the quota it holds.
func (ob *Observer) LeftToKueue(ctx context.Context, wl *kueue.Workload) bool {
	ref, err := ob.courierCheck(ctx, wl)
	if err != nil || ref.ac == nil || ref.state.State != kueue.CheckStateReady {
		return false
	}
	job, a, err := ob.job(ctx, wl)
	return err == nil && job != nil && a.Outcome(job).Finished
}
