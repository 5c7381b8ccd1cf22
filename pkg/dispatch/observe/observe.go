// Package observe is the first step of a dispatch pass: it reads one
// manager Workload, its job, its policy's workers and what Courier holds
// of it on each worker, from the manager's cache and the workers'
// informers, into the plan.Observed the planner decides on. It decides
// nothing: it derives facts (a copy is of an earlier admission, a worker
// has been lost since a time, a worker is passed over), and reads
// Courier's expectations without writing them; what it saw that settles
// one goes into Result.Seen for the act step to record.
package observe

import (
	"context"
	"errors"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/dispatchpolicy"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/placement"
)

// Observe reads what the planner needs about wl.
func (ob *Observer) Observe(ctx context.Context, wl *kueue.Workload) (Result, error) {
	now := ob.Now()
	res := Result{Observed: plan.Observed{Now: now, Workload: wl}}
	o := &res.Observed
	if ob.Expectations.Behind(wl.UID, wl.ResourceVersion, now) {
		o.Behind = true
		return res, nil
	}
	res.Seen.CaughtUp = append(res.Seen.CaughtUp, wl.UID)
	ref, err := ob.observeCheck(ctx, &res)
	if err != nil || o.Disowned {
		return res, err
	}
	if err := ob.observeJob(ctx, &res); err != nil {
		return res, err
	}
	workers, err := ob.observeManager(ctx, &res, ref)
	if err != nil {
		return res, err
	}
	var policy placement.Policy
	if ref.ac != nil && o.Misconfigured == "" && plan.WaitsForWorker(*o) {
		if policy, err = ob.observeCandidates(ctx, &res, ref.ac, workers); err != nil {
			return res, err
		}
	}
	if err := ob.observeRemotes(ctx, &res, workers); err != nil {
		return res, err
	}
	if err := ob.observeQuotaWait(ctx, &res); err != nil {
		return res, err
	}
	all := make([]*courier.WorkerCluster, 0, len(workers))
	for _, wc := range workers {
		all = append(all, wc)
	}
	res.Observed.SelfFault = lostworker.SelfFault(all, ob.Lost)
	if len(o.Candidates) > 0 {
		in := ob.placementInput(wl, res.Job, policy, *o, workers, &res.Seen)
		o.PlacementInput = &in
	}
	return res, nil
}

// observeCheck finds Courier's admission check on the Workload, and the
// placement recorded on it; a Workload neither carries, whose copies
// Courier does not hold, is Disowned.
func (ob *Observer) observeCheck(ctx context.Context, res *Result) (checkRef, error) {
	o, wl := &res.Observed, res.Observed.Workload
	record, err := workload.PlacementOf(wl)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Ignoring a placement record Courier did not write", "reason", err.Error())
	}
	ref, err := ob.courierCheck(ctx, wl)
	if err != nil {
		return ref, err
	}
	ref, ours, err := ob.adopt(ctx, wl, ref, record)
	if o.Disowned = !ours; err != nil || o.Disowned {
		return ref, err
	}
	o.CheckMissing, o.Placement, o.Evictions = ref.missingMessage(), record, workload.Evictions(wl)
	if o.Moves, err = workload.MovesOf(wl); err != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Ignoring a record of moves Courier did not write", "reason", err.Error())
	}
	o.WorkerLostTimeout, o.KueueFinishGrace = ob.WorkerLostTimeout, ob.KueueFinishGrace
	o.Remotes, o.Health = map[string]plan.Remote{}, map[string]plan.Health{}
	for c, n := range ob.Expectations.PassedOver(wl.UID, o.Now) {
		o.PassedOver = passOver(o.PassedOver, c, n)
	}
	if ref.state != nil {
		o.Check, o.HasCheck, res.Check = *ref.state, true, ref.state.Name
	}
	for _, c := range wl.Status.AdmissionChecks {
		if (ref.state == nil || c.Name != ref.state.Name) && c.State != kueue.CheckStateReady {
			o.ChecksNotReady = append(o.ChecksNotReady, string(c.Name))
		}
	}
	return ref, nil
}

// observeManager reads what else on the manager decides whether the job
// may go out: a ClusterQueue that also runs MultiKueue, the objects the
// job needs, and the WorkerClusters, whose RuntimePatches travel with it.
func (ob *Observer) observeManager(ctx context.Context, res *Result, ref checkRef) (map[string]*courier.WorkerCluster, error) {
	o, wl := &res.Observed, res.Observed.Workload
	var err error
	if ref.ac != nil {
		if o.Misconfigured, err = dispatchpolicy.Misconfiguration(ctx, ob.Client, wl, ref.ac); err != nil {
			return nil, err
		}
	}
	if res.Job.Obj != nil && o.Misconfigured == "" {
		if res.Job.Deps, o.Misconfigured, err = ob.dependencies(ctx, res.Job.Obj); err != nil {
			return nil, err
		}
	}
	workers, err := ob.workerClusters(ctx)
	if err != nil {
		return nil, err
	}
	res.Job.Patches = map[string]*trainer.TrainingRuntimeSpecPatch{}
	for name, wc := range workers {
		if wc.Spec.RuntimePatch != nil {
			res.Job.Patches[name] = wc.Spec.RuntimePatch
		}
	}
	return workers, nil
}

// observeJob reads the Workload's job on the manager: gone, rejected,
// ended, or behind a status Courier mirrored onto it.
func (ob *Observer) observeJob(ctx context.Context, res *Result) error {
	o, wl := &res.Observed, res.Observed.Workload
	if owner := metav1.GetControllerOf(wl); owner != nil {
		res.Job.Name = owner.Name
	}
	job, a, err := ob.job(ctx, wl)
	var rej *adapter.Rejection
	switch {
	case errors.As(err, &rej):
		o.Rejection = rej.Message
	case err != nil:
		return err
	case job == nil:
		o.JobMissing = true
	default:
		if err := a.Check(job); errors.As(err, &rej) {
			o.Rejection = rej.Message
		}
		o.JobEnd = a.Outcome(job)
		o.JobBehind = ob.Expectations.Behind(job.GetUID(), job.GetResourceVersion(), o.Now)
		if !o.JobBehind {
			res.Seen.CaughtUp = append(res.Seen.CaughtUp, job.GetUID())
		}
	}
	res.Job.Obj, res.Job.Adapter = job, a
	return nil
}

// observeCandidates lists the policy's workers, each with why it cannot
// take the job now or ever, and returns the compiled policy.
func (ob *Observer) observeCandidates(ctx context.Context, res *Result, ac *kueue.AdmissionCheck, workers map[string]*courier.WorkerCluster) (placement.Policy, error) {
	o := &res.Observed
	names, policy, misconfigured, err := ob.policyClusters(ctx, ac, workers)
	if err != nil || misconfigured != "" {
		o.Misconfigured = misconfigured
		return policy, err
	}
	for _, name := range names {
		c := plan.Candidate{Name: name}
		c.Unusable, c.Refuses = ob.unusable(o.Workload, name, workers, res.Job, o)
		o.Candidates = append(o.Candidates, c)
	}
	return policy, nil
}

// observeRemotes reads, on every worker that is connected or that the
// Workload names, its health and what Courier holds there; and for the
// placed worker, what it takes to bring the job's changes to its copy.
func (ob *Observer) observeRemotes(ctx context.Context, res *Result, workers map[string]*courier.WorkerCluster) error {
	o, wl := &res.Observed, res.Observed.Workload
	clusters := sets.New(ob.Remotes.Names()...)
	clusters.Insert(wl.Status.NominatedClusterNames...)
	if wl.Status.ClusterName != nil {
		clusters.Insert(*wl.Status.ClusterName)
	}
	if o.Placement != nil {
		clusters.Insert(o.Placement.Cluster)
	}
	for _, name := range sets.List(clusters) {
		o.Health[name] = ob.health(name, workers)
		remote, err := ob.Remotes.Get(name)
		if err != nil {
			continue
		}
		rs, err := ob.remoteState(ctx, remote, wl, res.Job, &res.Seen)
		if err != nil {
			return fmt.Errorf("reading copies on %s: %w", name, err)
		}
		o.Remotes[name] = rs
	}
	live := plan.LivePlacement(*o)
	for name, rs := range o.Remotes {
		if rs.UnseenJob && name != live {
			// A job copy Courier created moments ago that the worker's
			// informer has not shown yet (its watch starting again after
			// the worker's API server came back, say) may be running, and
			// no delete found it: it counts as an old copy until the
			// informer shows it, which its event follows, or has read past
			// its create without it.
			rs.OldJob = true
			o.Remotes[name] = rs
			o.UnseenJob = true
		}
	}
	if live != "" {
		if err := ob.vanishedCopy(ctx, res, live); err != nil {
			return fmt.Errorf("reading what ran the vanished copy on %s: %w", live, err)
		}
	}
	return ob.observeForwarding(res)
}

// observeForwarding compares the manager's job with its copy on the worker
// the plan may carry it on, for a job that may be dispatched as it is.
// The comparison is the dearest part of a pass's observation, and passes
// at a job that ended, many of them, have no use for it.
func (ob *Observer) observeForwarding(res *Result) error {
	o, job := &res.Observed, res.Job
	c := plan.CarriedOn(*o)
	if c == "" || o.Rejection != "" || job.Obj == nil {
		return nil
	}
	rs := o.Remotes[c]
	if rs.JobCopy == nil {
		return nil
	}
	f, err := job.Adapter.Forward(job.Obj, rs.JobCopy, adapter.Destination{Workload: o.Workload.Name, Origin: ob.Origin, RuntimePatch: job.Patches[c]})
	var rej *adapter.Rejection
	switch {
	case errors.As(err, &rej):
		return nil
	case err != nil:
		return fmt.Errorf("comparing the job with its copy on %s: %w", c, err)
	}
	rs.Forward = &f
	o.Remotes[c] = rs
	return nil
}
