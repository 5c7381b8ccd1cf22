package act

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/pkg/testing/workers"
)

func TestStopRunner(t *testing.T) {
	jobSets := schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	running := trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated")
	complete := trainJob().Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted")
	cases := map[string]struct {
		copy        *trainertesting.TrainJobWrapper
		answer      workers.JobSetRead
		deleteErr   error
		wantReads   int
		wantDeletes []string
		wantErr     bool
	}{
		"a running copy's JobSet: deleted in the foreground, only if it is still the one read": {
			copy: running, answer: workers.JobSetRead{Controller: "copy-uid"}, wantReads: 1,
			wantDeletes: []string{"JobSet team-a/tj Foreground uid=js-uid"},
		},
		"a finished copy's pods are done: nothing read or deleted": {
			copy: complete, answer: workers.JobSetRead{Controller: "copy-uid"},
		},
		"already deleting in the foreground: not deleted again": {
			copy: running, answer: workers.JobSetRead{Controller: "copy-uid", Finalizers: []string{metav1.FinalizerDeleteDependents}}, wantReads: 1,
		},
		"a JobSet of the name another owner controls: left alone": {
			copy: running, answer: workers.JobSetRead{Controller: "someone-else"}, wantReads: 1,
		},
		"no JobSet yet": {
			copy: running, answer: workers.JobSetRead{Err: apierrors.NewNotFound(jobSets, "tj")}, wantReads: 1,
		},
		"gone or replaced between the read and the delete": {
			copy: running, answer: workers.JobSetRead{Controller: "copy-uid"}, deleteErr: apierrors.NewConflict(jobSets, "tj", errors.New("uid precondition")), wantReads: 1,
			wantDeletes: []string{"JobSet team-a/tj Foreground uid=js-uid"},
		},
		"Courier may not delete JobSets: the copy goes all the same": {
			copy: running, answer: workers.JobSetRead{Controller: "copy-uid"}, deleteErr: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule")), wantReads: 1,
			wantDeletes: []string{"JobSet team-a/tj Foreground uid=js-uid"},
		},
		"Courier may not read JobSets: the copy goes all the same": {
			copy: running, answer: workers.JobSetRead{Err: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule"))}, wantReads: 1,
		},
		"the worker cannot answer now: an error, and the copy stays for the next pass": {
			copy: running, answer: workers.JobSetRead{Err: apierrors.NewServiceUnavailable("etcd is down")}, wantReads: 1, wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			var deletes []string
			api := workers.FakeClient(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return tc.answer.Into(key, obj)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					o := (&client.DeleteOptions{}).ApplyOptions(opts)
					deletes = append(deletes, fmt.Sprintf("%s %s/%s %s uid=%s", obj.GetObjectKind().GroupVersionKind().Kind,
						obj.GetNamespace(), obj.GetName(), *o.PropagationPolicy, *o.Preconditions.UID))
					return tc.deleteErr
				},
			})
			a := newActor(workers.Remotes{})
			copy := workers.TrainJobCopy(t, tc.copy)
			copy.SetUID("copy-uid")
			err := a.stopRunner(context.Background(), workers.New("w1", api, api), adapter.NewTrainJob(), copy)
			if (err != nil) != tc.wantErr {
				t.Fatalf("stopRunner() error = %v, want an error: %t", err, tc.wantErr)
			}
			if reads != tc.wantReads {
				t.Errorf("reads of the worker = %d, want %d", reads, tc.wantReads)
			}
			if diff := cmp.Diff(tc.wantDeletes, deletes); diff != "" {
				t.Errorf("deletes (-want +got):\n%s", diff)
			}
		})
	}
}

// Left to the worker's garbage collector, a running TrainJob copy's JobSet
// would go in the background after the copy, before its pods: Courier
// deletes it, in the foreground, first.
func TestARunningTrainJobCopyGoesAfterItsJobSet(t *testing.T) {
	job := workers.TrainJobCopy(t, trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated"))
	job.SetUID("job-copy-uid")
	var deletes []string
	w1 := workers.FakeClient(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind != "JobSet" {
				return c.Get(ctx, key, obj, opts...)
			}
			return workers.JobSetRead{Controller: "job-copy-uid"}.Into(key, obj)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := (&client.DeleteOptions{}).ApplyOptions(opts)
			deletes = append(deletes, fmt.Sprintf("%s %s", obj.GetObjectKind().GroupVersionKind().Kind, *o.PropagationPolicy))
			if obj.GetObjectKind().GroupVersionKind().Kind == "JobSet" {
				return nil
			}
			return c.Delete(ctx, obj, opts...)
		},
	}, job)
	a := newActor(workers.Remotes{"w1": workers.New("w1", w1, w1)})
	gone, err := a.deleteCopies(context.Background(), "w1", ns, "trainjob-tj", workload.Job{Adapter: adapter.NewTrainJob(), Name: "tj"})
	if err != nil || !gone {
		t.Fatalf("deleteCopies() = %t, %v; want true, nil", gone, err)
	}
	if diff := cmp.Diff([]string{"JobSet Foreground", "TrainJob Background"}, deletes); diff != "" {
		t.Errorf("deletes on w1, in order (-want +got):\n%s", diff)
	}
	if _, ok := a.Expectations.RemnantOf(expect.RemnantKey{Cluster: "w1", Namespace: ns, Name: "tj"}, a.Now()); !ok {
		t.Errorf("the deleted copy's JobSet is not waited for")
	}
}

func TestReleasePatch(t *testing.T) {
	cases := map[string]struct {
		finalizers []string
		want       string
	}{
		"none of Courier's or Kueue's: no patch": {finalizers: []string{"example.com/keep"}},
		"Courier's and Kueue's, around another, each tested where seen, from the end": {
			finalizers: []string{courier.RemoteFinalizer, "example.com/keep", workload.ResourceInUseFinalizer},
			want: `[{"op":"test","path":"/metadata/finalizers/2","value":"kueue.x-k8s.io/resource-in-use"},{"op":"remove","path":"/metadata/finalizers/2"},` +
				`{"op":"test","path":"/metadata/finalizers/0","value":"courier.dev/dispatcher"},{"op":"remove","path":"/metadata/finalizers/0"}]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(releasePatch(tc.finalizers))); diff != "" {
				t.Errorf("releasePatch() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
