package observe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/lostworker"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/pkg/testing/workers"
)

const ns = "team-a"

var t0 = time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)

// newObserver is an observer of the workers, its clock at t0.
func newObserver(remotes workers.Remotes) *Observer {
	return &Observer{Client: workers.FakeClient(interceptor.Funcs{}), Remotes: remotes, Expectations: expect.New(),
		Origin: "courier", WorkerLostTimeout: time.Minute, Now: func() time.Time { return t0 }}
}

func TestRemnantLeft(t *testing.T) {
	jobSets := schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	deleting := metav1.NewTime(time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC))
	cases := map[string]struct {
		noted      bool
		answer     workers.JobSetRead
		wantLeft   bool
		wantWhy    string
		wantHeld   string
		wantErr    bool
		wantForgot bool
	}{
		"no copy of the job was deleted: nothing to read": {},
		"the deleted copy's JobSet is there": {
			noted: true, answer: workers.JobSetRead{Controller: "copy-uid"}, wantLeft: true,
		},
		"the deleted copy's JobSet is being deleted, held by a foreign finalizer: named": {
			noted: true, answer: workers.JobSetRead{Controller: "copy-uid", Deleting: &deleting, Finalizers: []string{metav1.FinalizerDeleteDependents, "example.com/hold"}},
			wantLeft: true,
			wantHeld: "JobSet team-a/tj has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold",
		},
		"gone": {
			noted: true, answer: workers.JobSetRead{Err: apierrors.NewNotFound(jobSets, "tj")}, wantForgot: true,
		},
		"a JobSet of the name made for another copy since": {
			noted: true, answer: workers.JobSetRead{Controller: "new-copy-uid"}, wantForgot: true,
		},
		"Courier may not read JobSets: it waits, and says which rule to grant": {
			noted: true, answer: workers.JobSetRead{Err: apierrors.NewForbidden(jobSets, "tj", errors.New("no rule"))}, wantLeft: true,
			wantWhy: "Courier may not read jobsets there to tell; grant get on jobsets.jobset.x-k8s.io (config/worker/rbac.yaml)",
		},
		"the worker cannot answer now: an error, to retry": {
			noted: true, answer: workers.JobSetRead{Err: apierrors.NewServiceUnavailable("etcd is down")}, wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			api := workers.FakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				return tc.answer.Into(key, obj)
			}})
			ob := newObserver(workers.Remotes{})
			if tc.noted {
				copy := &unstructured.Unstructured{}
				copy.SetNamespace(ns)
				copy.SetName("tj")
				copy.SetUID("copy-uid")
				n, _ := expect.NewRemnant("w1", adapter.NewTrainJob(), copy)
				ob.Expectations.Remnant(n.Key, n.Remnant, ob.Now())
			}
			seen := &expect.Seen{}
			got, err := ob.remnantLeft(context.Background(), workers.New("w1", api, api), ns, "tj", seen)
			ob.Expectations.Settle(*seen, ob.Now())
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
			_, remembered := ob.Expectations.RemnantOf(expect.RemnantKey{Cluster: "w1", Namespace: ns, Name: "tj"}, ob.Now())
			if remembered != (tc.noted && !tc.wantForgot) {
				t.Errorf("remembered after = %t, want %t", remembered, tc.noted && !tc.wantForgot)
			}
		})
	}
}

func TestHeldBy(t *testing.T) {
	deleting := metav1.NewTime(time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC))
	cases := map[string]struct {
		deletion   *metav1.Time
		finalizers []string
		want       string
	}{
		"not being deleted": {
			finalizers: []string{"example.com/hold"},
		},
		"being deleted, held by nothing": {
			deletion: &deleting,
		},
		"held by Courier's finalizer and the garbage collector's alone, which go by themselves": {
			deletion:   &deleting,
			finalizers: []string{courier.RemoteFinalizer, metav1.FinalizerDeleteDependents},
		},
		"held by a foreign finalizer: named, with the time": {
			deletion:   &deleting,
			finalizers: []string{metav1.FinalizerDeleteDependents, "example.com/hold", "example.com/audit"},
			want:       "TrainJob team-a/job has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold, example.com/audit",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			copy := &unstructured.Unstructured{}
			copy.SetGroupVersionKind(trainer.SchemeGroupVersion.WithKind("TrainJob"))
			copy.SetNamespace("team-a")
			copy.SetName("job")
			copy.SetDeletionTimestamp(tc.deletion)
			copy.SetFinalizers(tc.finalizers)
			if diff := cmp.Diff(tc.want, heldBy(copy.GetKind(), copy)); diff != "" {
				t.Errorf("heldBy (-want +got):\n%s", diff)
			}
		})
	}
}

// After a restart, a worker's disconnect recorded before it counts from
// Courier's start: a Courier down longer than workerLostTimeout while the
// worker recovered must not take the old disconnect for a long loss.
func TestHealthCountsNoLossFromBeforeCourierStarted(t *testing.T) {
	started := t0.Add(-time.Minute)
	cases := map[string]struct {
		disconnected time.Time
		want         time.Time
	}{
		"lost an hour before Courier started": {disconnected: t0.Add(-time.Hour), want: started},
		"lost since Courier started":          {disconnected: t0.Add(-30 * time.Second), want: t0.Add(-30 * time.Second)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ob := newObserver(workers.Remotes{})
			ob.Lost = lostworker.Settings{Policy: courier.LostWorkerTimeout, Timeout: 15 * time.Minute, Started: started}
			wc := &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}
			wc.Status.DisconnectedSince = &metav1.Time{Time: tc.disconnected}
			wc.Status.Conditions = []metav1.Condition{{Type: courier.WorkerClusterActive, Status: metav1.ConditionFalse, Reason: courier.ReasonUnreachable}}
			h := ob.health("w1", map[string]*courier.WorkerCluster{"w1": wc})
			if h.LostSince == nil || !h.LostSince.Time.Equal(tc.want) {
				t.Errorf("LostSince = %v, want %v", h.LostSince, tc.want)
			}
		})
	}
}

func TestMirrorIn(t *testing.T) {
	cond := func(typ, status, reason string, at time.Time) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "lastTransitionTime": at.UTC().Format(time.RFC3339)}
	}
	resumedAt := func(at time.Time) []any { return []any{cond("Suspended", "False", "Resumed", at)} }
	resumed := resumedAt(t0.Add(-time.Hour))
	cases := map[string]struct {
		delay    time.Duration
		created  time.Time
		mirrored time.Time
		// manager and copy are the jobs' conditions; the copy's counts of
		// pods always differ.
		manager, copy []any
		want          time.Duration
		held          bool
	}{
		"no delay configured: at once": {
			created: t0, want: 0,
		},
		"a copy made moments ago, never mirrored: waits out the delay from its creation": {
			delay: 5 * time.Second, created: t0.Add(-2 * time.Second), copy: resumedAt(t0.Add(-2 * time.Second)), want: 3 * time.Second,
		},
		"a copy older than the delay, never mirrored, changed long ago: at once": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), copy: resumed, want: 0,
		},
		"mirrored a second ago: waits out the delay from that mirror": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-time.Second), copy: resumed, want: 4 * time.Second,
		},
		"mirrored longer ago than the delay: at once": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-10 * time.Second), copy: resumed, want: 0,
		},
		"changed on the worker a second ago: waits out the delay from that change": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-10 * time.Second), copy: resumedAt(t0.Add(-time.Second)), want: 4 * time.Second,
		},
		"changed on the worker at a time ahead of this clock: waits from the last mirror": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-3 * time.Second), copy: resumedAt(t0.Add(time.Minute)), want: 2 * time.Second,
		},
		"only the counts changed, mirrored 10 s ago: waits six times the delay from that mirror": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-10 * time.Second), manager: resumed, copy: resumed, want: 20 * time.Second,
		},
		"only the counts changed, mirrored longer ago than six times the delay: at once": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-31 * time.Second), manager: resumed, copy: resumed, want: 0,
		},
		"a copy still suspended by its worker's Kueue, long after its creation: held until it changes phase": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), copy: []any{cond("Suspended", "True", "Suspended", t0.Add(-time.Minute))}, held: true,
		},
		"a copy suspended again after it ran: mirrored as a change of phase": {
			delay: 5 * time.Second, created: t0.Add(-time.Minute), mirrored: t0.Add(-30 * time.Second), manager: resumed,
			copy: []any{cond("Suspended", "True", "Suspended", t0.Add(-10*time.Second))}, want: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ob := newObserver(workers.Remotes{})
			ob.StatusMirrorDelay = tc.delay
			job := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tc.manager}}}
			job.SetUID("job-uid")
			if !tc.mirrored.IsZero() {
				ob.Expectations.StatusMirrored(job.GetUID(), tc.mirrored)
			}
			copy := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
				"conditions": tc.copy, "jobsStatus": []any{map[string]any{"name": "node", "active": int64(1)}}}}}
			copy.SetCreationTimestamp(metav1.NewTime(tc.created))
			got, held := ob.mirrorIn(workload.Job{Obj: job}, copy, t0)
			if diff := cmp.Diff([]any{tc.want, tc.held}, []any{got, held}); diff != "" {
				t.Errorf("mirrorIn (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVanishedCopy(t *testing.T) {
	cases := map[string]struct {
		ended, finished bool
		wantReads       int
	}{
		"the running job's copy went behind Courier's back: the worker is read for what still runs it": {wantReads: 1},
		"the manager's job shows its end: nothing of the copy can run it again, nothing is read":       {ended: true},
		"the Workload finished: nothing is read":                                                       {finished: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reads := 0
			api := workers.FakeClient(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return apierrors.NewNotFound(schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}, key.Name)
				},
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					reads++
					return nil
				},
			})
			wl := kueuetesting.MakeWorkload("wl", ns).Check("courier", kueue.CheckStateReady, "").ClusterName("w1")
			if tc.finished {
				wl.Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0)
			}
			res := &Result{
				Observed: plan.Observed{Workload: wl.Obj(), Remotes: map[string]plan.Remote{"w1": {}}, JobEnd: adapter.Outcome{Finished: tc.ended}},
				Job:      workload.Job{Adapter: adapter.NewTrainJob(), Name: "tj"},
				Check:    "courier",
			}
			ob := newObserver(workers.Remotes{"w1": workers.New("w1", api, api)})
			if err := ob.vanishedCopy(context.Background(), res, "w1"); err != nil {
				t.Fatalf("vanishedCopy() error = %v", err)
			}
			if reads != tc.wantReads {
				t.Errorf("reads of the worker = %d, want %d", reads, tc.wantReads)
			}
		})
	}
}
