package act

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// syncJob mirrors the status of the worker's job copy, as the informer
// has it, onto the manager's job.
func (a *Actor) syncJob(ctx context.Context, c string, wl *kueue.Workload, job workload.Job) error {
	if job.Obj == nil {
		return nil
	}
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return nil // Out of reach; the next look mirrors what is there then.
	}
	copy := &unstructured.Unstructured{}
	copy.SetGroupVersionKind(job.Adapter.GVK())
	if err := remote.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: job.Name}, copy); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := a.mirror(ctx, job, copy); err != nil {
		return err
	}
	a.Expectations.StatusMirrored(job.Obj.GetUID(), a.Now())
	return nil
}

// finalSync mirrors the worker job's last status before Courier finishes
// the Workload or removes the copy: from the informer's copy when that
// already shows the job's end, and otherwise from a read of the worker's
// API server. The informer of jobs may lag behind the one of Workloads,
// and the worker's Kueue finished the Workload only after it saw the job's
// end, so a read now sees at least that; a cached copy that shows the end
// holds it already, and the read, one request to the worker per job, is
// saved. The manager's answer to the status patch is the job as it is then
// stored.
func (a *Actor) finalSync(ctx context.Context, c string, wl *kueue.Workload, job workload.Job, cached *unstructured.Unstructured) error {
	if job.Obj == nil {
		return nil // The manager's job is gone: nobody to show the status to.
	}
	copy := cached
	if copy == nil {
		remote, err := a.Remotes.Get(c)
		if err != nil {
			return err
		}
		copy = &unstructured.Unstructured{}
		copy.SetGroupVersionKind(job.Adapter.GVK())
		if err := remote.APIReader.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: job.Name}, copy); err != nil {
			if apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("Finishing without the final job status: the worker's copy is gone", "cluster", c)
				return nil
			}
			return fmt.Errorf("reading the job copy: %w", err)
		}
	}
	if !workload.Owned(copy, a.Origin) || !workload.JobCopyOf(copy, wl) {
		return nil
	}
	if err := a.mirror(ctx, job, copy); err != nil {
		return err
	}
	a.Expectations.Mirrored(copy.GetUID(), a.Now())
	return nil
}

// mirror makes the manager job's status equal to the worker copy's. Once
// that status shows the job's end, it stands: the job's API refuses to take
// an end back, or to replace it with another run's (a copy a worker counted
// lost ran meanwhile), for ever, and the refusal is not retried. A mirror
// that ends the job is awaited by the next pass (see ownWrites), which
// must not dispatch the job again from a cache behind it.
func (a *Actor) mirror(ctx context.Context, job workload.Job, copy *unstructured.Unstructured) error {
	data, err := job.Adapter.StatusPatch(job.Obj, copy)
	if err != nil {
		return err
	}
	ended, version := job.Adapter.Outcome(job.Obj).Finished, job.Obj.GetResourceVersion()
	if err := a.patchJobStatus(ctx, job.Obj, data); err != nil {
		if ended && apierrors.IsInvalid(err) {
			ctrl.LoggerFrom(ctx).V(2).Info("Keeping the manager job's final status: the worker's copy differs", "copy", klog.KObj(copy), "copyUID", copy.GetUID(), "refusal", err.Error())
			return nil
		}
		return err
	}
	if !ended && job.Adapter.Outcome(job.Obj).Finished {
		a.wroteOver(job.Obj, version)
	}
	return nil
}

// clearActivity removes the manager job's mirrored activity. The patch is
// decided on the cached job, and guarded by its version: from a cache
// behind a final status it would strip the final counts, leaving a job
// Complete without them (TestClearingActivityKeepsAFinalStatusTheCacheHasNotShown).
func (a *Actor) clearActivity(ctx context.Context, job workload.Job) error {
	data, err := job.Adapter.ClearActivityPatch(job.Obj)
	if err != nil || data == nil {
		return err
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return fmt.Errorf("decoding the status patch: %w", err)
	}
	patch["metadata"] = guard{ResourceVersion: job.Obj.GetResourceVersion()}
	if data, err = json.Marshal(patch); err != nil {
		return fmt.Errorf("encoding the status patch: %w", err)
	}
	return a.patchJobStatus(ctx, job.Obj, data)
}

// patchJobStatus applies a merge patch to a manager job's status; job
// then holds what the API server stored.
func (a *Actor) patchJobStatus(ctx context.Context, job *unstructured.Unstructured, data []byte) error {
	if data == nil {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, data)
	if slices.Contains(a.StatusInObject, job.GroupVersionKind()) {
		return client.IgnoreNotFound(a.Client.Patch(ctx, job, patch))
	}
	return client.IgnoreNotFound(a.Client.Status().Patch(ctx, job, patch))
}
