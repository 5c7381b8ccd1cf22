package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/courierdev/courier/pkg/adapter"
)

func TestRemnantLeft(t *testing.T) {
	jobSets := schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	// answer is how the worker's API server answers a read of the JobSet
	// named tj: held by controller, or an error.
	type answer struct {
		controller types.UID
		// deleting, with finalizers, for a JobSet being deleted.
		deleting   *metav1.Time
		finalizers []string
		err        error
	}
	deleting := metav1.NewTime(time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC))
	cases := map[string]struct {
		noted      bool
		answer     answer
		wantLeft   bool
		wantWhy    string
		wantHeld   string
		wantErr    bool
		wantForgot bool
	}{
		"no copy of the job was deleted: nothing to read": {},
		"the deleted copy's JobSet is there": {
			noted: true, answer: answer{controller: "copy-uid"}, wantLeft: true,
		},
		"the deleted copy's JobSet is being deleted, held by a foreign finalizer: named": {
			noted: true, answer: answer{controller: "copy-uid", deleting: &deleting, finalizers: []string{metav1.FinalizerDeleteDependents, "example.com/hold"}},
			wantLeft: true,
			wantHeld: "JobSet team-a/tj has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold",
		},
		"gone": {
			noted: true, answer: answer{err: apierrors.NewNotFound(jobSets, "tj")}, wantForgot: true,
		},
		"a JobSet of the name made for another copy since": {
			noted: true, answer: answer{controller: "new-copy-uid"}, wantForgot: true,
		},
		"Courier may not read JobSets: it waits, and says which rule to grant": {
			noted: true, answer: answer{err: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule"))}, wantLeft: true,
			wantWhy: "Courier may not read jobsets there to tell; grant get on jobsets.jobset.x-k8s.io (config/worker/rbac.yaml)",
		},
		"the worker cannot answer now: an error, to retry": {
			noted: true, answer: answer{err: apierrors.NewServiceUnavailable("etcd is down")}, wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			api := fakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				if tc.answer.err != nil {
					return tc.answer.err
				}
				obj.SetName(key.Name)
				obj.SetNamespace(key.Namespace)
				obj.SetOwnerReferences([]metav1.OwnerReference{{Kind: "TrainJob", Name: key.Name, UID: tc.answer.controller, Controller: ptr.To(true)}})
				obj.SetDeletionTimestamp(tc.answer.deleting)
				obj.SetFinalizers(tc.answer.finalizers)
				return nil
			}})
			r := New(fakeClient(interceptor.Funcs{}), fakeRemotes{}, nil, Options{})
			if tc.noted {
				copy := &unstructured.Unstructured{}
				copy.SetNamespace(ns)
				copy.SetName("tj")
				copy.SetUID("copy-uid")
				r.remnants.note("w1", adapter.NewTrainJob(), copy, r.now())
			}
			got, err := r.remnantLeft(context.Background(), newWorker("w1", api, api), ns, "tj")
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
			_, remembered := r.remnants.get(remnantKey{"w1", ns, "tj"}, r.now())
			if remembered != (tc.noted && !tc.wantForgot) {
				t.Errorf("remembered after = %t, want %t", remembered, tc.noted && !tc.wantForgot)
			}
		})
	}
}

// A finished copy's pods are done: its JobSet is no reason to wait.
func TestRemnantsSkipFinishedCopies(t *testing.T) {
	r := newRemnants()
	copy := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Complete", "status": "True"},
	}}}}
	copy.SetNamespace(ns)
	copy.SetName("tj")
	copy.SetUID("copy-uid")
	r.note("w1", adapter.NewTrainJob(), copy, t0)
	if _, ok := r.get(remnantKey{"w1", ns, "tj"}, t0); ok {
		t.Errorf("a finished copy was remembered")
	}
}
