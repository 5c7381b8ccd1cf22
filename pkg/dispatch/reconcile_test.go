package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/pkg/testing/workers"
)

// These tests drive Reconcile over fake clients, to make races happen on
// cue: an informer behind the API server, a status write that conflicts.
// Everything else about dispatch is tested against real API servers in
// test/integration/dispatch.

const ns = "team-a"

// fakeRemotes is a set of workers over fake clients.
type fakeRemotes = workers.Remotes

var (
	fakeClient = workers.FakeClient
	newWorker  = workers.New
)

// managerObjects are the check's objects and a TrainJob with its
// Workload, quota reserved.
func managerObjects(wl *kueue.Workload, job *trainer.TrainJob) []client.Object {
	return append(checkObjects(), job, wl)
}

// checkObjects are a Courier check over workers w1 and w2.
func checkObjects() []client.Object {
	return []client.Object{
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: check}, Spec: kueue.AdmissionCheckSpec{ControllerName: courier.ControllerName,
			Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: courier.GroupVersion.Group, Kind: "DispatchPolicy", Name: "p"}}},
		&courier.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: courier.DispatchPolicySpec{Clusters: []string{"w1", "w2"}}},
		couriertesting.MakeWorkerCluster("w1").Obj(), couriertesting.MakeWorkerCluster("w2").Obj(),
	}
}

func trainJob() *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob("tj", ns).UID("tj-uid").ManagedBy(adapter.TrainJobManagedBy)
}

func managerWl() *kueuetesting.WorkloadWrapper {
	return kueuetesting.MakeWorkload("trainjob-tj", ns).UID("wl-uid").
		Owner(trainer.GroupVersion.String(), trainer.TrainJobKind, "tj", "tj-uid").ReserveQuota("cq")
}

// remoteCopy is the manager Workload as its copy starts on a worker.
func remoteCopy() *kueuetesting.WorkloadWrapper {
	return kueuetesting.MakeWorkload("trainjob-tj", ns).ReserveQuota("cq")
}

// workloadCopy is Courier's copy of the manager Workload on a worker.
func workloadCopy(w *kueuetesting.WorkloadWrapper) *kueue.Workload {
	return w.UID(string(uuid.NewUUID())).Label(courier.OriginLabel, "courier").Annotation(courier.ManagerUIDAnnotation, "wl-uid").Obj()
}

// jobCopy is Courier's copy of the TrainJob on a worker, with a status.
func jobCopy(t *testing.T, status *trainertesting.TrainJobWrapper) *unstructured.Unstructured {
	job := trainJob()
	job.Status = status.Status
	return workers.TrainJobCopy(t, job)
}

// kueueFinishGrace is the grace the tests' dispatcher gives the manager's
// Kueue.
const kueueFinishGrace = configv1alpha1.DefaultKueueFinishGrace

func newReconciler(manager client.Client, workers fakeRemotes) *Reconciler {
	r := New(manager, workers, events.NewFakeRecorder(100), Options{
		Origin: "courier", WorkerLostTimeout: time.Minute, KueueFinishGrace: kueueFinishGrace, Concurrency: 1, Adapters: []adapter.Adapter{adapter.NewTrainJob()},
	})
	r.now = func() time.Time { return now }
	return r
}

func reconcileOnce(t *testing.T, r *Reconciler) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "trainjob-tj"}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

// finishedOnW1 is a job placed on w1 whose Workload copy there finished:
// the copy's Workload, the job copy as the informer still has it (running)
// and as the worker's API server has it (complete), and the manager's
// Workload and job, whose mirrored status is still the running one.
func finishedOnW1() (finished func() *kueuetesting.WorkloadWrapper, running, complete *trainertesting.TrainJobWrapper, wl *kueue.Workload, local *trainer.TrainJob) {
	finished = func() *kueuetesting.WorkloadWrapper {
		return remoteCopy().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, t0)
	}
	running = trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated").JobsStatus("node", 1, 0)
	complete = trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated").
		Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted").JobsStatus("node", 0, 1)
	wl = managerWl().ClusterName("w1").Check(check, kueue.CheckStateReady, readyMsg).
		Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":0}`).Obj()
	local = trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated").JobsStatus("node", 1, 0).Obj()
	return finished, running, complete, wl, local
}

// The worker finished the job; the informer of jobs has not seen the job's
// last status yet when the one of Workloads shows the Workload finished.
// The manager's job must get the last status, before its Workload
// finishes.
func TestFinishMirrorsTheFinalStatusFirst(t *testing.T) {
	finished, running, complete, wl, local := finishedOnW1()

	var writes []string
	manager := fakeClient(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		gvks, _, _ := workers.Scheme.ObjectKinds(obj)
		writes = append(writes, gvks[0].Kind)
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}, managerObjects(wl, local)...)
	informer := fakeClient(interceptor.Funcs{}, workloadCopy(finished()), jobCopy(t, running))
	api := fakeClient(interceptor.Funcs{}, workloadCopy(finished()), jobCopy(t, complete))
	reconcileOnce(t, newReconciler(manager, fakeRemotes{"w1": newWorker("w1", informer, api)}))

	got := expectCompleteAndFinished(t, manager, wl)
	if diff := cmp.Diff(complete.Status.JobsStatus, got.Status.JobsStatus); diff != "" {
		t.Errorf("manager TrainJob jobsStatus is not the worker's final one (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"TrainJob", "Workload"}, writes); diff != "" {
		t.Errorf("status writes on the manager in the wrong order (-want +got):\n%s", diff)
	}
}

// The job is created on the worker that admitted first, then the status
// write conflicts with Kueue's. By the next look the other worker has
// admitted too, in the same second, and would win a tie by name. The job
// must still run on the first worker only.
func TestConflictAfterTheJobWasCreatedKeepsItsWorker(t *testing.T) {
	wl := managerWl().Nominated("w1", "w2").Check(check, kueue.CheckStatePending, "").Obj()
	conflicted := false
	manager := fakeClient(statusRefusedOnce(&conflicted), managerObjects(wl, trainJob().Obj())...)
	// The informer has not seen the delete of the loser's copy yet: it
	// shows the copy as it was.
	w1 := fakeClient(interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return nil }},
		workloadCopy(remoteCopy()))
	w2 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy().Admit(t0)))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

	reconcileOnce(t, r)
	if !conflicted {
		t.Fatal("the status write did not happen")
	}
	expectJobOn(t, w2, true)

	// w1 admits in the same second; by name it would win a tie.
	copy := &kueue.Workload{}
	if err := w1.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "trainjob-tj"}, copy); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&copy.Status.Conditions, metav1.Condition{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted", LastTransitionTime: metav1.NewTime(t0)})
	if err := w1.Status().Update(context.Background(), copy); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	reconcileOnce(t, r)

	expectJobOn(t, w1, false)
	expectJobOn(t, w2, true)
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ClusterName == nil || *got.Status.ClusterName != "w2" {
		t.Errorf("clusterName = %v, want w2", got.Status.ClusterName)
	}
	var p workload.Placement
	if err := json.Unmarshal([]byte(got.Annotations[courier.PlacementAnnotation]), &p); err != nil || p.Cluster != "w2" {
		t.Errorf("placement = %q, want w2", got.Annotations[courier.PlacementAnnotation])
	}
}

// statusRefusedOnce refuses the first write of a Workload's status, as
// kueueWroteFirst does, and notes in refused that it did.
func statusRefusedOnce(refused *bool) interceptor.Funcs {
	return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		if _, ok := obj.(*kueue.Workload); ok && !*refused {
			*refused = true
			return kueueWroteFirst(ctx, c, obj)
		}
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}
}

// kueueWroteFirst stages a conflict as the API server has one: Kueue wrote
// a newer version of obj (its PodsReady, which no plan reads) before
// Courier's write, which is refused.
func kueueWroteFirst(ctx context.Context, c client.Client, obj client.Object) error {
	wl := &kueue.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), wl); err != nil {
		return err
	}
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadPodsReady, Status: metav1.ConditionFalse, Reason: "WaitForStart"})
	if err := c.Status().Update(ctx, wl); err != nil {
		return err
	}
	return apierrors.NewConflict(kueue.Resource("workloads"), obj.GetName(), errors.New("Kueue wrote first"))
}

func expectJobOn(t *testing.T, worker client.Client, want bool) {
	t.Helper()
	expectOn(t, worker, &trainer.TrainJob{}, "tj", want)
}

// expectOn asserts whether worker holds an object of obj's kind named
// name in the test namespace.
func expectOn(t *testing.T, worker client.Client, obj client.Object, name string, want bool) {
	t.Helper()
	err := worker.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if got := err == nil; got != want {
		t.Errorf("%T %s on the worker: %v, want %v (err: %v)", obj, name, got, want, err)
	}
}

// The placement write is refused (Courier decided on an old version of the
// Workload). Nothing may have been deleted for that decision: the losing
// copy stays until a decision is recorded.
func TestARefusedPlacementDeletesNothing(t *testing.T) {
	wl := managerWl().Nominated("w1", "w2").Check(check, kueue.CheckStatePending, "").Obj()
	refused := false
	manager := fakeClient(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*kueue.Workload); ok && !refused {
			refused = true
			return kueueWroteFirst(ctx, c, obj)
		}
		return c.Patch(ctx, obj, p, opts...)
	}}, managerObjects(wl, trainJob().Obj())...)
	w1 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy()))
	w2 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy().Admit(t0)))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

	reconcileOnce(t, r)
	if !refused {
		t.Fatal("the placement was not written")
	}
	if err := w1.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "trainjob-tj"}, &kueue.Workload{}); err != nil {
		t.Errorf("the losing copy went for a refused decision: %v", err)
	}
	expectJobOn(t, w1, false)
	expectJobOn(t, w2, false)

	reconcileOnce(t, r)
	expectJobOn(t, w2, true)
	if err := w1.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "trainjob-tj"}, &kueue.Workload{}); !apierrors.IsNotFound(err) {
		t.Errorf("the losing copy is still there once the placement is recorded: %v", err)
	}
}

// Courier deletes a copy, and the worker's informer has not seen the delete
// yet: it still shows the copy, admitted earlier than the other worker's.
// The deleted copy must not win.
func TestACopyCourierDeletedCannotWin(t *testing.T) {
	wl := managerWl().Nominated("w1", "w2").Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	// The informer keeps showing what Courier deleted.
	lagging := interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return nil }}
	w1 := fakeClient(lagging, workloadCopy(remoteCopy()))
	w2 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy()))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

	// w1 is passed over for a moment: its copy goes.
	r.exp.PassOver("wl-uid", "w1", expect.Note{Reason: "passed over", Until: now.Add(time.Minute)}, now)
	reconcileOnce(t, r)
	r.exp.ForgetWorkload("wl-uid")

	for name, c := range map[string]client.Client{"w1": w1, "w2": w2} {
		at := t0.Add(time.Second)
		if name == "w1" {
			at = t0
		}
		copy := &kueue.Workload{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "trainjob-tj"}, copy); err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&copy.Status.Conditions, metav1.Condition{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted", LastTransitionTime: metav1.NewTime(at)})
		if err := c.Status().Update(context.Background(), copy); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOnce(t, r)
	expectJobOn(t, w1, false)
	expectJobOn(t, w2, true)
}

// A finished TrainJob's copies cost the worker one delete: the job copy
// has no finalizer (Trainer never deletes TrainJobs), and the Workload copy
// its Kueue adopted goes with it through the worker's garbage collector.
func TestCleanupOfAFinishedTrainJobIsOneDelete(t *testing.T) {
	wl := managerWl().ClusterName("w1").Check(check, kueue.CheckStateReady, readyMsg).
		Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).
		Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":0}`).Obj()
	done := trainJob().Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted")
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, done.Obj())...)
	job := jobCopy(t, done)
	job.SetUID("job-copy-uid")
	copy := workloadCopy(remoteCopy().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0))
	copy.OwnerReferences = []metav1.OwnerReference{{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: "tj", UID: "job-copy-uid", Controller: new(true)}}
	var writes []string
	count := func(verb string) { writes = append(writes, verb) }
	w1 := fakeClient(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count("create")
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			count("patch")
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count("delete " + obj.GetObjectKind().GroupVersionKind().Kind)
			return c.Delete(ctx, obj, opts...)
		},
	}, copy, job)
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1)})
	reconcileOnce(t, r)
	reconcileOnce(t, r)
	if diff := cmp.Diff([]string{"delete TrainJob"}, writes); diff != "" {
		t.Errorf("writes to the worker (-want +got):\n%s", diff)
	}
}
