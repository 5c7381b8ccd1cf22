package dispatch

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/act"
	"github.com/courierdev/courier/pkg/dispatch/plan"
)

// Reconcile is one pass over a manager Workload: observe, plan, act.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &kueue.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, wl); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting Workload: %w", err)
		}
		// Deleted on the manager: nothing of it may stay on the workers.
		return r.actor.RemoveEverywhere(ctx, req.Namespace, req.Name)
	}
	obs, err := r.observer.Observe(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := plan.Decide(obs.Observed)
	logPlan(ctx, obs.Observed, p)
	return r.actor.Act(ctx, act.Input{Observed: obs.Observed, Plan: p, Job: obs.Job, Check: obs.Check, Seen: obs.Seen})
}

// logPlan logs, per pass, what the planner decided and on what room: a
// surprising nomination is explained by the capacity each worker showed,
// and a snapshot is gone a second later. The facts that bring another pass
// (a cache behind, the requeue asked for) say why passes come.
func logPlan(ctx context.Context, o plan.Observed, p plan.Plan) {
	log := ctrl.LoggerFrom(ctx).V(4)
	if !log.Enabled() {
		return
	}
	if in := o.PlacementInput; in != nil && p.Decision != nil {
		for _, c := range in.Clusters {
			log.Info("Placing with capacity", "cluster", c.Name, "unusable", c.Unusable, "capacity", c.Capacity, "nominate", p.Decision.Nominate)
		}
	}
	log.Info("Planned dispatch", "check", o.Check.State, "placement", o.Placement, "delete", p.Delete, "create", p.Create,
		"record", p.Record, "createJob", p.CreateJob, "syncJob", p.SyncJob, "finalSync", p.FinalSync, "statusChange", p.Status != nil,
		"behind", o.Behind, "jobBehind", o.JobBehind, "jobEnded", o.JobEnd.Finished, "requeueAfter", p.RequeueAfter)
}

// countPending counts the Workloads on which each of Courier's checks is
// Pending, from the cache's index: the pending-workloads gauge, computed
// at scrape time.
func (r *Reconciler) countPending() (map[string]int, error) {
	ctx := r.running
	counts := map[string]int{}
	for _, ac := range r.courierChecks(ctx, "") {
		list := &kueue.WorkloadList{}
		if err := r.client.List(ctx, list, client.MatchingFields{pendingCheckIndex: ac}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the Workloads pending on %s: %w", ac, err)
		}
		counts[ac] = len(list.Items)
	}
	return counts, nil
}
