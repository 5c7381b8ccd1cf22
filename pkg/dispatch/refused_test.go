package dispatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// The worker BestFit picks first has its Kueue down: its admission webhook
// cannot be called, and every create of a Workload copy there fails. The
// job goes to the other worker at once, and neither an event nor the
// nomination says it was copied where it was not, rather than wait,
// retried there alone.
func TestAWorkerThatFailsCreatesIsPassedOver(t *testing.T) {
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	failing := fakeClient(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return apierrors.NewInternalError(errors.New(`failed calling webhook "mworkload.kb.io": failed to call webhook: connection refused`))
	}})
	other := fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", failing, failing), "w2": newWorker("w2", other, other)})

	reconcileOnce(t, r)
	reconcileOnce(t, r)

	expectNoCopies(t, failing)
	copies := &kueue.WorkloadList{}
	if err := other.List(context.Background(), copies); err != nil || len(copies.Items) != 1 {
		t.Fatalf("copies on the other worker: %d (%v), want 1", len(copies.Items), err)
	}
	var got []string
	for recorded := r.actor.Recorder.(*events.FakeRecorder).Events; len(recorded) > 0; {
		got = append(got, <-recorded)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], `Warning CreateFailed Worker "w1" failed to create Workload`) {
		t.Errorf("events = %q, want CreateFailed for w1 alone (a first nomination has no event)", got)
	}
	nominated := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), nominated); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"w2"}, nominated.Status.NominatedClusterNames); diff != "" {
		t.Errorf("nominatedClusterNames (-want +got):\n%s", diff)
	}
}

// A worker that failed a create is passed over by the other jobs of the
// namespace, without a create each: BestFit ranks the worker whose Kueue
// is down first, and every new job would fail a create there before it
// went elsewhere. Jobs of another namespace still try it, and the
// namespace's do again once the pass-over (30 s) is over.
func TestAWorkerThatFailsCreatesIsPassedOverByTheNamespace(t *testing.T) {
	jobs := map[string]string{"a": ns, "b": ns, "c": "team-b", "d": ns}
	var objs []client.Object
	for name, namespace := range jobs {
		objs = append(objs, trainertesting.MakeTrainJob(name, namespace).UID(name+"-uid").ManagedBy(adapter.TrainJobManagedBy).Obj(),
			kueuetesting.MakeWorkload("trainjob-"+name, namespace).UID("wl-"+name).
				Owner(trainer.GroupVersion.String(), trainer.TrainJobKind, name, name+"-uid").ReserveQuota("cq").
				Check(check, kueue.CheckStatePending, "").Obj())
	}
	manager := fakeClient(interceptor.Funcs{}, append(checkObjects(), objs...)...)
	var tried []string
	failing := fakeClient(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		tried = append(tried, obj.GetNamespace()+"/"+obj.GetName())
		return apierrors.NewInternalError(errors.New(`failed calling webhook "mworkload.kb.io": failed to call webhook: connection refused`))
	}})
	other := fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", failing, failing), "w2": newWorker("w2", other, other)})
	pass := func(name string) {
		t.Helper()
		key := client.ObjectKey{Namespace: jobs[name], Name: "trainjob-" + name}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile %s: %v", key, err)
		}
	}

	pass("a")
	pass("a")
	pass("b")
	if diff := cmp.Diff([]string{ns + "/trainjob-a"}, tried); diff != "" {
		t.Errorf("creates tried on w1 after jobs a and b (-want +got):\n%s", diff)
	}
	wl := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "trainjob-b"}, wl); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"w2"}, wl.Status.NominatedClusterNames); diff != "" {
		t.Errorf("job b nominated (-want +got):\n%s", diff)
	}
	if msg := wl.Status.AdmissionChecks[0].Message; !strings.Contains(msg, "w1: failed to create Workload "+ns+"/trainjob-a; passed over until 11:00:30") {
		t.Errorf("job b's check message = %q, want w1 passed over for job a's failed create", msg)
	}

	pass("c")
	now := now.Add(30*time.Second + time.Second) // Past the pass-over of a failing worker.
	r.now = func() time.Time { return now }
	pass("d")
	want := []string{ns + "/trainjob-a", "team-b/trainjob-c", ns + "/trainjob-d"}
	if diff := cmp.Diff(want, tried); diff != "" {
		t.Errorf("creates tried on w1 (-want +got):\n%s", diff)
	}
	var failed int
	for recorded := r.actor.Recorder.(*events.FakeRecorder).Events; len(recorded) > 0; {
		if strings.HasPrefix(<-recorded, "Warning CreateFailed") {
			failed++
		}
	}
	if failed != 3 {
		t.Errorf("CreateFailed events = %d, want 3: one per create tried", failed)
	}
}

// A server error can follow a create that committed (etcd answered late,
// say): the job copy is there, running, and must not be dropped for
// another worker. It is read back and kept.
func TestAJobCreateTheWorkerFailedButCommittedIsKept(t *testing.T) {
	wl := managerWl().Nominated("w1").Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	lateAnswer := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if err := c.Create(ctx, obj, opts...); err != nil {
			return err
		}
		if _, ok := obj.(*kueue.Workload); ok {
			return nil
		}
		return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	}}
	w1 := fakeClient(lateAnswer, workloadCopy(remoteCopy().Admit(t0)))
	w2 := fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

	reconcileOnce(t, r)
	reconcileOnce(t, r)

	expectJobOn(t, w1, true)
	expectJobOn(t, w2, false)
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	if c := findCheck(got, check); c.State != kueue.CheckStateReady || !strings.Contains(c.Message, `"w1"`) {
		t.Errorf("check = %s %q, want Ready on w1", c.State, c.Message)
	}
	for recorded := r.actor.Recorder.(*events.FakeRecorder).Events; len(recorded) > 0; {
		if e := <-recorded; strings.Contains(e, " CreateFailed ") {
			t.Errorf("event %q for a create that committed", e)
		}
	}
}

// A job create a worker's admission webhook failed was not written: the
// job goes to the other worker in the next pass, not after a copy that
// might yet show had its time.
func TestAJobCreateAWebhookFailedGoesElsewhereAtOnce(t *testing.T) {
	wl := managerWl().Nominated("w1").Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	webhookDown := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*kueue.Workload); ok {
			return c.Create(ctx, obj, opts...)
		}
		return apierrors.NewInternalError(errors.New(`failed calling webhook "vtrainjob.kb.io": failed to call webhook: connection refused`))
	}}
	w1 := fakeClient(webhookDown, workloadCopy(remoteCopy().Admit(t0)))
	w2 := fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

	for range 4 {
		reconcileOnce(t, r)
	}

	expectJobOn(t, w1, false)
	copy := &kueue.Workload{}
	if err := w2.Get(context.Background(), client.ObjectKeyFromObject(wl), copy); err != nil {
		got := &kueue.Workload{}
		_ = manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got)
		t.Errorf("the job did not go to w2 at once: %v; check %q", err, findCheck(got, check).Message)
	}
}
