package dispatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// jobSetRead is how the worker's API server answers a read of a JobSet:
// the JobSet js-uid, of the name read, controlled by controller and, when
// deleting is set, being deleted with finalizers; or err.
type jobSetRead struct {
	controller types.UID
	deleting   *metav1.Time
	finalizers []string
	err        error
}

func (a jobSetRead) into(key client.ObjectKey, obj client.Object) error {
	if a.err != nil {
		return a.err
	}
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	obj.SetUID("js-uid")
	obj.SetOwnerReferences([]metav1.OwnerReference{{Kind: "TrainJob", Name: key.Name, UID: a.controller, Controller: ptr.To(true)}})
	obj.SetDeletionTimestamp(a.deleting)
	obj.SetFinalizers(a.finalizers)
	return nil
}

func TestRemnantLeft(t *testing.T) {
	jobSets := schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	deleting := metav1.NewTime(time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC))
	cases := map[string]struct {
		noted      bool
		answer     jobSetRead
		wantLeft   bool
		wantWhy    string
		wantHeld   string
		wantErr    bool
		wantForgot bool
	}{
		"no copy of the job was deleted: nothing to read": {},
		"the deleted copy's JobSet is there": {
			noted: true, answer: jobSetRead{controller: "copy-uid"}, wantLeft: true,
		},
		"the deleted copy's JobSet is being deleted, held by a foreign finalizer: named": {
			noted: true, answer: jobSetRead{controller: "copy-uid", deleting: &deleting, finalizers: []string{metav1.FinalizerDeleteDependents, "example.com/hold"}},
			wantLeft: true,
			wantHeld: "JobSet team-a/tj has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold",
		},
		"gone": {
			noted: true, answer: jobSetRead{err: apierrors.NewNotFound(jobSets, "tj")}, wantForgot: true,
		},
		"a JobSet of the name made for another copy since": {
			noted: true, answer: jobSetRead{controller: "new-copy-uid"}, wantForgot: true,
		},
		"Courier may not read JobSets: it waits, and says which rule to grant": {
			noted: true, answer: jobSetRead{err: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule"))}, wantLeft: true,
			wantWhy: "Courier may not read jobsets there to tell; grant get on jobsets.jobset.x-k8s.io (config/worker/rbac.yaml)",
		},
		"the worker cannot answer now: an error, to retry": {
			noted: true, answer: jobSetRead{err: apierrors.NewServiceUnavailable("etcd is down")}, wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			api := fakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				return tc.answer.into(key, obj)
			}})
			r := New(fakeClient(interceptor.Funcs{}), fakeRemotes{}, nil, Options{})
			if tc.noted {
				copy := &unstructured.Unstructured{}
				copy.SetNamespace(ns)
				copy.SetName("tj")
				copy.SetUID("copy-uid")
				n, _ := remnantOf("w1", adapter.NewTrainJob(), copy)
				r.exp.Remnant(n.Key, n.Remnant, r.now())
			}
			seen := &expect.Seen{}
			got, err := r.remnantLeft(context.Background(), newWorker("w1", api, api), ns, "tj", seen)
			r.exp.Settle(*seen, r.now())
			if (err != nil) != tc.wantErr {
				t.Fatalf("remnantLeft() error = %v, want an error: %t", err, tc.wantErr)
			}
			want := remnantState{left: tc.wantLeft, unknown: tc.wantWhy, held: tc.wantHeld}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(remnantState{})); diff != "" {
				t.Errorf("remnantLeft() (-want +got):\n%s", diff)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.noted]; reads != want {
				t.Errorf("reads of the worker = %d, want %d", reads, want)
			}
			_, remembered := r.exp.RemnantOf(expect.RemnantKey{Cluster: "w1", Namespace: ns, Name: "tj"}, r.now())
			if remembered != (tc.noted && !tc.wantForgot) {
				t.Errorf("remembered after = %t, want %t", remembered, tc.noted && !tc.wantForgot)
			}
		})
	}
}

// A finished copy's pods are done: its JobSet is no reason to wait.
func TestRemnantsSkipFinishedCopies(t *testing.T) {
	copy := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Complete", "status": "True"},
	}}}}
	copy.SetNamespace(ns)
	copy.SetName("tj")
	copy.SetUID("copy-uid")
	if n, ok := remnantOf("w1", adapter.NewTrainJob(), copy); ok {
		t.Errorf("a finished copy leaves a remnant: %+v", n)
	}
}

func TestStopRunner(t *testing.T) {
	jobSets := schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	running := trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated")
	complete := trainJob().Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted")
	cases := map[string]struct {
		copy        *trainertesting.TrainJobWrapper
		answer      jobSetRead
		deleteErr   error
		wantReads   int
		wantDeletes []string
		wantErr     bool
	}{
		"a running copy's JobSet: deleted in the foreground, only if it is still the one read": {
			copy: running, answer: jobSetRead{controller: "copy-uid"}, wantReads: 1,
			wantDeletes: []string{"JobSet team-a/tj Foreground uid=js-uid"},
		},
		"a finished copy's pods are done: nothing read or deleted": {
			copy: complete, answer: jobSetRead{controller: "copy-uid"},
		},
		"already deleting in the foreground: not deleted again": {
			copy: running, answer: jobSetRead{controller: "copy-uid", finalizers: []string{metav1.FinalizerDeleteDependents}}, wantReads: 1,
		},
		"a JobSet of the name another owner controls: left alone": {
			copy: running, answer: jobSetRead{controller: "someone-else"}, wantReads: 1,
		},
		"no JobSet yet": {
			copy: running, answer: jobSetRead{err: apierrors.NewNotFound(jobSets, "tj")}, wantReads: 1,
		},
		"gone or replaced between the read and the delete": {
			copy: running, answer: jobSetRead{controller: "copy-uid"}, deleteErr: apierrors.NewConflict(jobSets, "tj", errors.New("uid precondition")), wantReads: 1,
			wantDeletes: []string{"JobSet team-a/tj Foreground uid=js-uid"},
		},
		"Courier may not delete JobSets: the copy goes all the same": {
			copy: running, answer: jobSetRead{controller: "copy-uid"}, deleteErr: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule")), wantReads: 1,
			wantDeletes: []string{"JobSet team-a/tj Foreground uid=js-uid"},
		},
		"Courier may not read JobSets: the copy goes all the same": {
			copy: running, answer: jobSetRead{err: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule"))}, wantReads: 1,
		},
		"the worker cannot answer now: an error, and the copy stays for the next pass": {
			copy: running, answer: jobSetRead{err: apierrors.NewServiceUnavailable("etcd is down")}, wantReads: 1, wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			var deletes []string
			api := fakeClient(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return tc.answer.into(key, obj)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					o := (&client.DeleteOptions{}).ApplyOptions(opts)
					deletes = append(deletes, fmt.Sprintf("%s %s/%s %s uid=%s", obj.GetObjectKind().GroupVersionKind().Kind,
						obj.GetNamespace(), obj.GetName(), *o.PropagationPolicy, *o.Preconditions.UID))
					return tc.deleteErr
				},
			})
			r := New(fakeClient(interceptor.Funcs{}), fakeRemotes{}, nil, Options{})
			copy := jobCopy(t, tc.copy)
			copy.SetUID("copy-uid")
			err := r.stopRunner(context.Background(), newWorker("w1", api, api), adapter.NewTrainJob(), copy)
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
// would go in the background after the copy, before its pods (soak finding
// 19): Courier deletes it, in the foreground, first.
func TestARunningTrainJobCopyGoesAfterItsJobSet(t *testing.T) {
	job := jobCopy(t, trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated"))
	job.SetUID("job-copy-uid")
	var deletes []string
	w1 := fakeClient(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind != "JobSet" {
				return c.Get(ctx, key, obj, opts...)
			}
			return jobSetRead{controller: "job-copy-uid"}.into(key, obj)
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
	r := newReconciler(fakeClient(interceptor.Funcs{}), fakeRemotes{"w1": newWorker("w1", w1, w1)})
	gone, err := r.deleteCopies(context.Background(), "w1", ns, "trainjob-tj", jobInfo{adapter: adapter.NewTrainJob(), name: "tj"})
	if err != nil || !gone {
		t.Fatalf("deleteCopies() = %t, %v; want true, nil", gone, err)
	}
	if diff := cmp.Diff([]string{"JobSet Foreground", "TrainJob Background"}, deletes); diff != "" {
		t.Errorf("deletes on w1, in order (-want +got):\n%s", diff)
	}
	if _, ok := r.exp.RemnantOf(expect.RemnantKey{Cluster: "w1", Namespace: ns, Name: "tj"}, r.now()); !ok {
		t.Errorf("the deleted copy's JobSet is not waited for")
	}
}
