package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// A job whose worker w1 was lost is admitted again and placed on w2; w1
// comes back while that pass runs, still running the earlier copy. Created
// on w2 all the same, the job would run on both: a worker back in reach
// before the job is created holds the job back, and the next passes wait
// for its earlier copy to go.
func TestAWorkerBackInReachHoldsTheJobBack(t *testing.T) {
	wl := managerWl().Evicted("WorkerLost", 1).Nominated("w2").Check(check, kueue.CheckStatePending, "").Obj()
	old := jobCopy(t, trainertesting.MakeTrainJob("tj", ns))
	annotations := old.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[courier.AdmissionAnnotation] = "0"
	old.SetAnnotations(annotations)
	w1 := fakeClient(interceptor.Funcs{}, old)
	w2 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy().Admit(t0)))
	workers := fakeRemotes{"w1": nil, "w2": newWorker("w2", w2, w2)}
	manager := fakeClient(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		// w1 reconnects while the placement is being recorded.
		workers["w1"] = newWorker("w1", w1, w1)
		return c.Patch(ctx, obj, p, opts...)
	}}, managerObjects(wl, trainJob().Obj())...)
	r := newReconciler(manager, workers)

	reconcileOnce(t, r)
	expectJobOn(t, w2, false)
	expectCheck(t, manager, wl, kueue.CheckStatePending, "")

	reconcileOnce(t, r)
	expectJobOn(t, w2, false)
	expectCheck(t, manager, wl, kueue.CheckStatePending, `Waiting for worker "w1" to delete an earlier copy of the job`)
	expectJobOn(t, w1, false)

	// The earlier copy is gone: the job goes where it was placed.
	reconcileOnce(t, r)
	expectJobOn(t, w2, true)
	expectCheck(t, manager, wl, kueue.CheckStateReady, `Dispatched to worker "w2"`)
}

func expectCheck(t *testing.T, manager client.Client, wl *kueue.Workload, state kueue.CheckState, msg string) {
	t.Helper()
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	c := findCheck(got, check)
	if c == nil || c.State != state || !strings.HasPrefix(c.Message, msg) {
		t.Errorf("check = %+v, want %s with a message beginning %q", c, state, msg)
	}
}

// w1's API server has just come back, and its informer of jobs is still
// starting its watch again when Courier creates the job copy there; w1
// then evicts the workload. Passes that find no job copy on w1 must not
// delete the Workload copy only and dispatch the job to w2 while w1 runs
// it: a job copy Courier created moments ago counts until the informer
// shows it.
func TestAJobCopyTheInformerHasNotShownHoldsTheJobBack(t *testing.T) {
	wl := managerWl().Evicted("RemoteEvicted", 1).Nominated("w2").Check(check, kueue.CheckStatePending, "").
		Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":0}`).Obj()
	w1 := fakeClient(interceptor.Funcs{})
	w2 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy().Admit(t0)))
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})
	r.exp.Created(expect.CopyKey{Cluster: "w1", Kind: trainer.TrainJobKind, Workload: wl.UID}, "job-copy-uid", "7", now.Add(-time.Second))

	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
	if err != nil {
		t.Fatal(err)
	}
	expectJobOn(t, w2, false)
	expectCheck(t, manager, wl, kueue.CheckStatePending, `Removing the copies an earlier admission left on worker "w1"`)
	if res.RequeueAfter == 0 || res.RequeueAfter > requeueSoon {
		t.Errorf("RequeueAfter = %v, want at most %v: no event comes should the copy never show", res.RequeueAfter, requeueSoon)
	}

	// Never shown within expect.CreatedTTL: it was not there to show, and the job
	// is dispatched again.
	r.now = func() time.Time { return now.Add(expect.CreatedTTL) }
	reconcileOnce(t, r)
	reconcileOnce(t, r)
	expectCheck(t, manager, wl, kueue.CheckStatePending, "Waiting for a nominated worker to admit the workload. Nominated")
}
