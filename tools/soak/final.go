package soak

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/tools/localcluster"
)

// leftovers lists what Courier created on the workers and still exists:
// its job copies and Workloads, by the origin label.
func leftovers(ctx context.Context, workers map[string]client.Client) ([]string, error) {
	var out []string
	for w, c := range workers {
		for _, list := range []client.ObjectList{&trainer.TrainJobList{}, &batchv1.JobList{}, &kueue.WorkloadList{}} {
			if err := c.List(ctx, list, client.InNamespace(localcluster.Namespace), client.HasLabels{courier.OriginLabel}); err != nil {
				return nil, fmt.Errorf("listing Courier's objects on %s: %w", w, err)
			}
			err := meta.EachListItem(list, func(o runtime.Object) error {
				obj := o.(client.Object)
				// JobSet's child Jobs inherit labels; they go with their JobSet.
				if metav1.GetControllerOf(obj) != nil {
					return nil
				}
				out = append(out, fmt.Sprintf("%s %T %s (created %s)", w, obj, obj.GetName(), obj.GetCreationTimestamp().Format(time.TimeOnly)))
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// awaitNoOrphans waits up to limit for every object Courier created on the
// workers to be gone, and returns those left.
func awaitNoOrphans(ctx context.Context, workers map[string]client.Client, limit time.Duration) ([]string, error) {
	var left []string
	var listErr error
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, limit, true, func(ctx context.Context) (bool, error) {
		left, listErr = leftovers(ctx, workers)
		return listErr == nil && len(left) == 0, nil
	})
	if listErr != nil {
		return nil, listErr
	}
	return left, nil
}

// check evaluates the invariants on what the soak recorded and what the
// clusters hold at the end.
func check(ctx context.Context, mgr client.Client, in *injector, rec *recorder, faults []*Fault, orphans []string,
	quiet time.Time, lostTimeout time.Duration, opts Options) (*Report, error) {
	end := time.Now()
	jobs := rec.snapshot()
	wls := &kueue.WorkloadList{}
	if err := mgr.List(ctx, wls, client.InNamespace(localcluster.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the manager's Workloads: %w", err)
	}
	for i := range jobs {
		jobs[i].RanOn = ranOn(jobs[i], end)
	}
	var faultErrs []string
	for _, f := range faults {
		if f.Error != "" {
			faultErrs = append(faultErrs, fmt.Sprintf("%s on %s at %s: %s", f.Kind, f.Target, f.At, f.Error))
		}
	}
	overlapOffenders, unpromised, overlaps := checkOverlaps(jobs, end, faults, in.policy, lostTimeout)
	statusOffenders, statusNotes := checkStatus(jobs)
	disturbed, undisturbed := checkUndisturbed(jobs, faults)
	noConcurrent := invariant(NoConcurrentRuns, overlapOffenders)
	noConcurrent.Unpromised = unpromised
	invariants := []Invariant{
		noConcurrent,
		invariant(NoLostJob, checkLost(jobs)),
		invariant(FinalStatus, statusOffenders, statusNotes...),
		invariant(NoOrphan, orphans),
		invariant(NoPendingCheck, checkPendingChecks(wls.Items, localcluster.CheckName)),
		invariant(NoWaitingForRoom, checkWaiting(jobs, quiet, end, opts.WaitBound)),
		invariant(ForeignUntouched, in.checkForeign(ctx)),
		invariant(FaultsInjected, faultErrs),
	}
	if len(undisturbed) > 0 {
		invariants = append(invariants, invariant(NoDisturbance, disturbed, undisturbed...))
	}
	return &Report{Run: in.run, WorkerLostTimeout: lostTimeout, LostWorkerPolicy: in.policy, Quiet: quiet, Faults: faults,
		Foreign: in.foreign, Disconnections: rec.disconnected(), Overlaps: overlaps, RanAgain: checkRanAgain(jobs), Jobs: jobs, Invariants: invariants}, nil
}
