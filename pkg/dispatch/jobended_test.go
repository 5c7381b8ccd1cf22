package dispatch

// Passes on a Workload whose manager job already shows its end, mirrored
// from a worker's copy, before Kueue finished the Workload.

import (
	"context"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
)

// completeJob is a TrainJob whose status shows it completed.
func completeJob() *trainer.TrainJob {
	return trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated").
		Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted").JobsStatus("node", 0, 1).Obj()
}

// A worker counted lost came back holding a copy that ran to its end, and
// its final status reached the manager's job; Kueue evicted the Workload
// for the lost worker and admitted it again before it saw the job's end.
// The pass on that admission must not send the job out a second time.
func TestAnEndedJobIsNotDispatchedAgain(t *testing.T) {
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, completeJob())...)
	w1, w2 := fakeClient(interceptor.Funcs{}), fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

	reconcileOnce(t, r)

	for _, w := range []client.Client{w1, w2} {
		expectNoCopies(t, w)
		expectJobOn(t, w, false)
	}
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	fin := meta.FindStatusCondition(got.Status.Conditions, kueue.WorkloadFinished)
	if fin == nil || fin.Status != metav1.ConditionTrue || fin.Reason != kueue.WorkloadFinishedReasonSucceeded {
		t.Errorf("manager Workload's Finished = %+v, want True, Succeeded", fin)
	}
	if c := findCheck(got, check); c == nil || c.State != kueue.CheckStateReady {
		t.Errorf("check = %+v, want Ready on a finished Workload", c)
	}
}

// The Workload finished from the manager job's end, mirrored from one run;
// the placed worker's copy ran again and ended differently. The job's API
// refuses to take the end on the manager back for ever: the pass keeps it,
// and goes on to remove the copies and turn the check Ready, instead of
// failing on the mirror at every pass.
func TestAnEndOnTheManagerStands(t *testing.T) {
	wl := managerWl().ClusterName("w1").Check(check, kueue.CheckStatePending, "").
		Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":0}`).
		Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, t0).Obj()
	refusals := 0
	manager := fakeClient(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		if _, ok := obj.(*kueue.Workload); !ok {
			refusals++
			return apierrors.NewInvalid(schema.GroupKind{Group: trainer.GroupVersion.Group, Kind: trainer.TrainJobKind}, obj.GetName(),
				field.ErrorList{field.Invalid(field.NewPath("status", "conditions"), nil, "cannot disable the terminal Complete=True condition")})
		}
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}, managerObjects(wl, completeJob())...)
	again := trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated").
		Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted").JobsStatus("node", 0, 2)
	w1 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy().Admit(t0).
		Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, t0)), jobCopy(t, again))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1)})

	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if refusals == 0 {
		t.Fatal("the other run's status was never offered to the manager's job")
	}
	expectJobOn(t, w1, false)
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	if c := findCheck(got, check); c == nil || c.State != kueue.CheckStateReady {
		t.Errorf("check = %+v, want Ready on a finished Workload", c)
	}
}

// The pass that mirrors the job's end onto the manager leaves the Workload
// to the manager's Kueue, which evicts and admits it again instead of
// finishing it. Until the manager's cache shows the end Courier mirrored,
// a pass must not take the job for one that never ran: it waits, and then
// finishes the Workload.
func TestAPassWaitsForTheCacheToShowTheEndItMirrored(t *testing.T) {
	finished, _, complete, wl, local := finishedOnW1()
	cache := &laggingJob{}
	manager := fakeClient(interceptor.Funcs{Get: cache.get}, managerObjects(wl, local)...)
	stale := storedJob(t, manager)
	copy := jobCopy(t, complete)
	copy.SetUID("copy-uid") // As the worker's API server gives it: Courier remembers the mirror by it.
	w1 := fakeClient(interceptor.Funcs{}, workloadCopy(finished()), copy)
	w2 := fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)}

	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if got := storedJob(t, manager); !adapter.NewTrainJob().Outcome(got).Finished {
		t.Fatalf("the job's end was not mirrored: %v", got.Object["status"])
	}
	// Kueue evicted and admitted the Workload again: the placement on w1
	// is an earlier admission's, and its copies are gone.
	evictAndAdmitAgain(t, manager, wl)
	for _, obj := range []client.Object{&kueue.Workload{}, &trainer.TrainJob{}} {
		if err := w1.DeleteAllOf(context.Background(), obj, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	cache.shown = stale
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != requeueSoon {
		t.Errorf("pass on a cache behind the mirrored end = %+v, %v; want a requeue in %s", res, err, requeueSoon)
	}
	expectNoCopies(t, w1)
	expectNoCopies(t, w2)
	cache.shown = nil
	reconcileOnce(t, r)
	expectNoCopies(t, w1)
	expectNoCopies(t, w2)
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, kueue.WorkloadFinished) {
		t.Errorf("manager Workload not finished once the cache shows the job's end: %+v", got.Status.Conditions)
	}
}

// evictAndAdmitAgain is what the manager's Kueue leaves of a Workload it
// evicted for a check in Retry and admitted again: one eviction more, no
// clusterName, the check Pending.
func evictAndAdmitAgain(t *testing.T, manager client.Client, wl *kueue.Workload) {
	t.Helper()
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	got.Status.ClusterName = nil
	got.Status.SchedulingStats = &kueue.SchedulingStats{Evictions: []kueue.WorkloadSchedulingStatsEviction{{Reason: kueue.WorkloadEvictedByAdmissionCheck, Count: 1}}}
	findCheck(got, check).State = kueue.CheckStatePending
	if err := manager.Status().Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
}

// expectNoCopies asserts that a worker holds no Workload copy.
func expectNoCopies(t *testing.T, worker client.Client) {
	t.Helper()
	copies := &kueue.WorkloadList{}
	if err := worker.List(context.Background(), copies); err != nil {
		t.Fatal(err)
	}
	if len(copies.Items) != 0 {
		t.Errorf("the worker got %d Workload copies of a job that ended, want none", len(copies.Items))
	}
}

// Kueue evicted the Workload; the manager's cache still shows its job
// running, though its final status is on the API server. Clearing the
// job's activity, decided on the cached job, must not strip the final
// counts from the job as stored.
func TestClearingActivityKeepsAFinalStatusTheCacheHasNotShown(t *testing.T) {
	wl := managerWl().Check(check, kueue.CheckStatePending, "").
		Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, kueue.WorkloadEvictedByAdmissionCheck, t0).Obj()
	running := trainJob().Condition("Created", metav1.ConditionTrue, "JobsCreated").JobsStatus("node", 1, 0).Obj()
	cache := &laggingJob{}
	manager := fakeClient(interceptor.Funcs{Get: cache.get}, managerObjects(wl, running)...)
	seen := storedJob(t, manager)
	tj := &trainer.TrainJob{}
	if err := manager.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tj"}, tj); err != nil {
		t.Fatal(err)
	}
	tj.Status = completeJob().Status
	if err := manager.Status().Update(context.Background(), tj); err != nil {
		t.Fatal(err)
	}
	cache.shown = seen
	r := newReconciler(manager, fakeRemotes{})

	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("pass on a cached job behind the stored one = %+v, %v; want a requeue", res, err)
	}
	cache.shown = nil
	got := &trainer.TrainJob{}
	if err := manager.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tj"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.JobsStatus) == 0 || !meta.IsStatusConditionTrue(got.Status.Conditions, trainer.TrainJobComplete) {
		t.Errorf("the stored job's final status was changed: %+v", got.Status)
	}
}

// laggingJob is the manager's cache of its TrainJob "tj" falling behind:
// while shown is set, reads of the job return it, not the job as stored.
type laggingJob struct{ shown *unstructured.Unstructured }

func (l *laggingJob) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == trainer.TrainJobKind && l.shown != nil {
		l.shown.DeepCopyInto(u)
		return nil
	}
	return c.Get(ctx, key, obj, opts...)
}

// storedJob reads the manager's TrainJob "tj" as stored now.
func storedJob(t *testing.T, manager client.Client) *unstructured.Unstructured {
	t.Helper()
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.TrainJobKind))
	if err := manager.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tj"}, job); err != nil {
		t.Fatal(err)
	}
	return job
}
