package soak

// Faults on the objects Courier reads and writes: the manager's Workloads,
// its AdmissionCheck and WorkerClusters, foreign objects on a worker, and
// submissions.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/tools/localcluster"
)

// deactivateOnManager deactivates the manager Workload of a running job,
// as its owner pausing it would, waits until Courier has removed the copy
// from its worker, and activates the Workload again. It is activated
// again in any case, once the wait is over.
//
// Courier can remove the copy only while the worker answers, so the fault
// holds the copy's worker: it picks a copy on a worker no other fault holds
// (a paused API server, a partition), and keeps any from starting there
// until it ends.
func (in *injector) deactivateOnManager(ctx context.Context, f *Fault, locks map[string]*sync.Mutex) (string, error) {
	job, cp, err := in.liveCopy(ctx, "", onFreeWorker(locks))
	if err != nil {
		return "", err
	}
	defer locks[cp.Worker].Unlock()
	f.Hit = append(f.Hit, job.Name)
	if job.Workload == "" {
		return "", fmt.Errorf("no manager Workload recorded for %s", job.Name)
	}
	key := client.ObjectKey{Namespace: localcluster.Namespace, Name: job.Workload}
	if err := setActive(ctx, in.mgr, key, false); err != nil {
		return "", err
	}
	start := time.Now()
	waitErr := wait.PollUntilContextTimeout(ctx, time.Second, findFor, true, func(context.Context) (bool, error) {
		for _, j := range in.rec.snapshot() {
			if j.Name != job.Name {
				continue
			}
			for _, c := range j.Copies {
				if c.UID == cp.UID {
					return !c.Deleted.IsZero(), nil
				}
			}
		}
		return false, nil
	})
	removed := time.Since(start).Round(time.Second)
	rctx, cancel := restoreContext()
	defer cancel()
	if err := setActive(rctx, in.mgr, key, true); err != nil {
		return "", err
	}
	note := fmt.Sprintf("deactivated Workload %s of %s %s while it ran on %s; its copy removed after %s, activated again", job.Workload, job.Kind, job.Name, cp.Worker, removed)
	if waitErr != nil {
		return note, fmt.Errorf("the copy of %s on %s still existed %s after its manager Workload was deactivated: %w", job.Name, cp.Worker, findFor, waitErr)
	}
	return note, nil
}

// setActive sets spec.active of a Workload.
func setActive(ctx context.Context, c client.Client, key client.ObjectKey, active bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wl := &kueue.Workload{}
		if err := c.Get(ctx, key, wl); err != nil {
			return err
		}
		wl.Spec.Active = ptr.To(active)
		return c.Update(ctx, wl)
	})
	if err != nil {
		return fmt.Errorf("setting spec.active of Workload %s to %t: %w", key, active, err)
	}
	return nil
}

// foreignObject creates, on worker, a suspended job nobody queues under
// the name of a job, then submits that job to the manager.
func (in *injector) foreignObject(ctx context.Context, worker string) (string, error) {
	n := in.next()
	spec := JobSpec{Name: fmt.Sprintf("soak-%s-foreign-%d", in.run, n), Kind: TrainJob, RunFor: 5 * time.Second}
	if n%2 == 0 {
		spec.Kind = BatchJob
	}
	obj := jobObject(spec, in.run)
	// Not the run's, not queued, suspended: nothing runs it, and the
	// soak's informers do not take it for a copy.
	obj.SetLabels(map[string]string{"soak.courier.dev/foreign": in.run})
	foreignSpec(obj)
	if err := in.workers[worker].Create(ctx, obj); err != nil {
		return "", fmt.Errorf("creating a foreign %s %s on %s: %w", spec.Kind, spec.Name, worker, err)
	}
	in.mu.Lock()
	in.foreign = append(in.foreign, Foreign{Worker: worker, Kind: spec.Kind, Name: spec.Name, UID: string(obj.GetUID())})
	in.mu.Unlock()
	if err := submit(ctx, in.mgr, spec, in.run, in.rec); err != nil {
		return "", err
	}
	return fmt.Sprintf("foreign %s %s on %s, then the same job submitted", spec.Kind, spec.Name, worker), nil
}

// recreateCheck deletes Courier's AdmissionCheck and creates it again.
// Kueue keeps an AdmissionCheck a ClusterQueue uses Terminating (its
// resource-in-use finalizer); after checkGoneFor the fault removes that
// finalizer, as someone forcing the deletion would, so that the check is
// really gone for checkGoneFor before it is created again.
func (in *injector) recreateCheck(ctx context.Context) (string, error) {
	key := client.ObjectKey{Name: localcluster.CheckName}
	ac := &kueue.AdmissionCheck{}
	if err := in.mgr.Get(ctx, key, ac); err != nil {
		return "", fmt.Errorf("getting AdmissionCheck %s: %w", ac.Name, err)
	}
	if err := in.mgr.Delete(ctx, ac); err != nil {
		return "", fmt.Errorf("deleting AdmissionCheck %s: %w", ac.Name, err)
	}
	sleep(ctx, checkGoneFor)
	rctx, cancel := restoreContext()
	defer cancel()
	err := wait.PollUntilContextTimeout(rctx, time.Second, restoreFor, true, func(ctx context.Context) (bool, error) {
		cur := &kueue.AdmissionCheck{}
		if err := in.mgr.Get(ctx, key, cur); err != nil {
			return apierrors.IsNotFound(err), nil
		}
		cur.Finalizers = nil
		_ = in.mgr.Update(ctx, cur)
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("removing the finalizers of AdmissionCheck %s: %w", ac.Name, err)
	}
	sleep(ctx, checkGoneFor)
	fresh := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: ac.Name, Labels: ac.Labels}, Spec: ac.Spec}
	err = wait.PollUntilContextTimeout(rctx, time.Second, restoreFor, true, func(ctx context.Context) (bool, error) {
		return in.mgr.Create(ctx, fresh.DeepCopy()) == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("creating AdmissionCheck %s again: %w", ac.Name, err)
	}
	return fmt.Sprintf("deleted (Terminating for %s, Kueue's finalizer then removed), gone for %s, created again", checkGoneFor, checkGoneFor), nil
}

// managerBack is how a fault waits for the manager's API server while a
// manager-apiserver-kill restarts it: a second at a time, up to a minute.
var managerBack = wait.Backoff{Duration: time.Second, Factor: 1, Steps: 60}

// serverDown tells an error of an API server that does not serve now:
// one restarting, or its connection gone.
func serverDown(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// deleteWorkerCluster deletes a WorkerCluster that holds a running job,
// waits until Courier has drained it and it is gone, and creates it again.
func (in *injector) deleteWorkerCluster(ctx context.Context, worker string) (string, error) {
	job, _, err := in.liveCopy(ctx, worker, nil)
	if err != nil {
		return "", err
	}
	// The fault's target is the worker, so a manager-apiserver-kill may
	// overlap it: the manager is waited for.
	wc := &courier.WorkerCluster{}
	if err := retry.OnError(managerBack, serverDown, func() error {
		return in.mgr.Get(ctx, client.ObjectKey{Name: worker}, wc)
	}); err != nil {
		return "", fmt.Errorf("getting WorkerCluster %s: %w", worker, err)
	}
	if err := retry.OnError(managerBack, serverDown, func() error {
		return client.IgnoreNotFound(in.mgr.Delete(ctx, wc)) // A retry after a delete that went through.
	}); err != nil {
		return "", fmt.Errorf("deleting WorkerCluster %s: %w", worker, err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), in.lostTimeout+restoreFor+time.Minute)
	defer cancel()
	start := time.Now()
	err = wait.PollUntilContextCancel(rctx, time.Second, true, func(ctx context.Context) (bool, error) {
		err := in.mgr.Get(ctx, client.ObjectKey{Name: worker}, &courier.WorkerCluster{})
		return apierrors.IsNotFound(err), nil
	})
	drained := time.Since(start).Round(time.Second)
	// Created again in any case, once gone: a drain that took too long
	// fails the fault, not the rest of the soak.
	cctx, ccancel := restoreContext()
	defer ccancel()
	fresh := &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: wc.Name, Labels: wc.Labels}, Spec: wc.Spec}
	createErr := wait.PollUntilContextTimeout(cctx, time.Second, restoreFor, true, func(ctx context.Context) (bool, error) {
		return in.mgr.Create(ctx, fresh.DeepCopy()) == nil, nil
	})
	note := fmt.Sprintf("deleted while it ran %s; gone after %s, created again", job.Name, drained)
	if err != nil {
		return note, fmt.Errorf("WorkerCluster %s still existed %s after its deletion (its Draining condition says what holds it): %w", worker, drained, errors.Join(err, createErr))
	}
	return note, createErr
}

// quickJobs submits a burst of jobs that finish a second after they start.
func (in *injector) quickJobs(ctx context.Context) (string, error) {
	n := in.next()
	var names []string
	for i := range quickJobsPerBurst {
		spec := JobSpec{Name: fmt.Sprintf("soak-%s-quick-%d-%d", in.run, n, i), Kind: TrainJob, RunFor: time.Second}
		if i%2 == 1 {
			spec.Kind = BatchJob
		}
		if err := submit(ctx, in.mgr, spec, in.run, in.rec); err != nil {
			return strings.Join(names, " "), err
		}
		names = append(names, spec.Name)
	}
	return strings.Join(names, " "), nil
}

// forbiddenPatch submits a TrainJob whose RuntimePatch sets env on the node
// container, which the workers' Trainer forbids. Courier's webhook on the
// manager refuses it now, so that none reaches a worker: the fault asserts
// that refusal.
func (in *injector) forbiddenPatch(ctx context.Context) (string, error) {
	spec := JobSpec{Name: fmt.Sprintf("soak-%s-forbidden-%d", in.run, in.next()), Kind: TrainJob}
	in.rec.expect(spec)
	tj := trainertesting.MakeTrainJob(spec.Name, localcluster.Namespace).Queue(localcluster.LocalQueue).
		Label(runLabel, in.run).GPUs(1).NodeEnv("example.com/soak", "SOAK", "1").Obj()
	err := submitJob(ctx, in.mgr, tj)
	if err == nil {
		in.rec.submitted(spec.Name, time.Now())
		return "", fmt.Errorf("the manager accepted TrainJob %s with a RuntimePatch Trainer forbids (env on the node container); Courier's webhook should refuse it", spec.Name)
	}
	if !apierrors.IsInvalid(err) {
		return "", fmt.Errorf("submitting TrainJob %s with a forbidden RuntimePatch: want a 422 refusal, got: %w", spec.Name, err)
	}
	in.rec.refused(spec.Name, err.Error())
	return "refused at submission: " + err.Error(), nil
}

// checkForeign returns a problem for each foreign object that is gone,
// was replaced or was taken over by Courier.
func (in *injector) checkForeign(ctx context.Context) []string {
	var out []string
	for _, f := range in.foreign {
		obj := jobObject(JobSpec{Name: f.Name, Kind: f.Kind}, in.run)
		err := in.workers[f.Worker].Get(ctx, client.ObjectKeyFromObject(obj), obj)
		_, labelled := obj.GetLabels()[courier.OriginLabel]
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s %s on %s: %v", f.Kind, f.Name, f.Worker, err))
		case string(obj.GetUID()) != f.UID:
			out = append(out, fmt.Sprintf("%s %s on %s was replaced (uid %s, was %s)", f.Kind, f.Name, f.Worker, obj.GetUID(), f.UID))
		case labelled:
			out = append(out, fmt.Sprintf("%s %s on %s carries Courier's origin label", f.Kind, f.Name, f.Worker))
		}
	}
	return out
}
