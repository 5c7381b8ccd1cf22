package benchstack

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/adapter"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/tools/localcluster"
)

// runLabel tells the run's TrainJobs apart, on the manager and, as Courier
// copies labels, on the workers.
const runLabel = "bench.courier.dev/run"

// createAttempts bounds the tries of one submission: a webhook of a peer
// may time out on a busy machine.
const createAttempts = 5

func jobNames(run string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("stack-%s-%04d", run, i)
	}
	return names
}

// benchJob is a one-GPU TrainJob on the local queue for Courier to
// dispatch. Its pods carry no run-for annotation, so kwok completes them
// as soon as they run and the quota frees up for the next jobs.
func benchJob(name, run string) *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob(name, localcluster.Namespace).Queue(localcluster.LocalQueue).
		ManagedBy(adapter.TrainJobManagedBy).GPUs(1).Label(runLabel, run)
}

// submit creates the named jobs on the manager, built by build, at rate
// per second, on a fixed schedule from the first, so that a slow create
// does not slow the arrivals that follow; it reports each submission, at
// the time its create was sent.
func submit(ctx context.Context, c client.Client, names []string, rate float64, build func(name string) client.Object, submitted func(name string, at time.Time)) error {
	start := time.Now()
	for i, name := range names {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return fmt.Errorf("submitting job %d of %d: %w", i+1, len(names), ctx.Err())
		}
		sent := time.Now()
		if err := create(ctx, c, build(name)); err != nil {
			return err
		}
		submitted(name, sent)
	}
	return nil
}

// create creates a job, trying again on errors other than a refusal; a
// job that exists was created by an attempt whose answer was lost.
func create(ctx context.Context, c client.Client, obj client.Object) error {
	var err error
	for attempt := range createAttempts {
		if attempt > 0 {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return fmt.Errorf("submitting %s: %w", obj.GetName(), ctx.Err())
			}
		}
		err = c.Create(ctx, obj.DeepCopyObject().(client.Object))
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			break
		}
	}
	return fmt.Errorf("submitting %s: %w", obj.GetName(), err)
}
