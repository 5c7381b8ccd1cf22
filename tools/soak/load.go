package soak

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	batchtesting "github.com/courierdev/courier/pkg/testing/batch"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/tools/localcluster"
)

// runLabel tells the soak's jobs apart; Courier copies it to the workers.
const runLabel = "soak.courier.dev/run"

// submitFor bounds the retries of one submission: Courier's webhooks, with
// failurePolicy Fail, refuse every job while the replica serving them is
// killed and restarted, and while restart-after-down keeps every replica
// down for workerLostTimeout and more.
const submitFor = 5 * time.Minute

// jobObject builds the manager object of a job: one GPU for a TrainJob, one
// CPU for a batch Job, and pods that run for spec.RunFor on kwok nodes.
func jobObject(spec JobSpec, run string) client.Object {
	if spec.Kind == BatchJob {
		b := batchtesting.MakeJob(spec.Name, localcluster.Namespace).Queue(localcluster.LocalQueue).
			ManagedBy(courier.ControllerName).CPU("1").Label(runLabel, run)
		if spec.RunFor > 0 {
			b.PodAnnotation(trainertesting.RunForAnnotation, spec.RunFor.String())
		}
		return b.Obj()
	}
	b := trainertesting.MakeTrainJob(spec.Name, localcluster.Namespace).Queue(localcluster.LocalQueue).
		ManagedBy(adapter.TrainJobManagedBy).GPUs(1).Label(runLabel, run)
	if spec.RunFor > 0 {
		b.RunFor("example.com/soak", spec.RunFor)
	}
	return b.Obj()
}

// submitJob creates the job on the manager, retrying what is not a
// refusal for up to submitFor; a job that exists was created by an attempt
// whose answer was lost. A refusal (422, 403, 400) is returned as is.
func submitJob(ctx context.Context, c client.Client, obj client.Object) error {
	deadline := time.Now().Add(submitFor)
	for {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("submitting %s for %s: %w", obj.GetName(), submitFor, err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return fmt.Errorf("submitting %s: %w", obj.GetName(), ctx.Err())
		}
	}
}

// submitLoad submits the planned jobs on their schedule from start,
// recording each; it stops at the first error.
func submitLoad(ctx context.Context, c client.Client, jobs []JobSpec, run string, start time.Time, rec *recorder) error {
	for _, spec := range jobs {
		select {
		case <-time.After(time.Until(start.Add(spec.At))):
		case <-ctx.Done():
			return fmt.Errorf("submitting the load: %w", ctx.Err())
		}
		if err := submit(ctx, c, spec, run, rec); err != nil {
			return err
		}
	}
	return nil
}

// submit records and submits one job.
func submit(ctx context.Context, c client.Client, spec JobSpec, run string, rec *recorder) error {
	rec.expect(spec)
	if err := submitJob(ctx, c, jobObject(spec, run)); err != nil {
		return err
	}
	rec.submitted(spec.Name, time.Now())
	return nil
}

// foreignSpec makes a job object one nobody runs: suspended, and managed
// by the built-in controllers, which leave a suspended job alone.
func foreignSpec(obj client.Object) {
	switch o := obj.(type) {
	case *trainer.TrainJob:
		o.Spec.ManagedBy, o.Spec.Suspend = nil, ptr.To(true)
	case *batchv1.Job:
		o.Spec.ManagedBy, o.Spec.Suspend = nil, ptr.To(true)
	}
}
