package dispatch

// Passes that race the worker's Kueue, the manager's Kueue, or Courier's
// own informers lagging behind its writes.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/expect"
)

// A pass that reads a Workload Courier has just written over (its cache
// behind its own write) writes nothing: the write's event brings the next
// pass, on the new version.
func TestAPassOnAVersionCourierWroteOverWritesNothing(t *testing.T) {
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Obj()
	writes := 0
	manager := fakeClient(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		writes++
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}, managerObjects(wl, trainJob().Obj())...)
	w1 := fakeClient(interceptor.Funcs{})
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1)})
	cached := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), cached); err != nil {
		t.Fatal(err)
	}
	r.exp.WroteOver(cached.UID, cached.ResourceVersion, now)
	reconcileOnce(t, r)
	if writes != 0 {
		t.Errorf("%d status writes on a version Courier wrote over, want none", writes)
	}
	r.exp.CaughtUp(cached.UID)
	reconcileOnce(t, r)
	if writes == 0 {
		t.Error("no status write once the cache is current")
	}
}

// Courier gave the job's worker up (its check in Retry) while the manager's
// Workload informer had stopped delivering: the manager's API server had
// restarted, and its reflector listed again only 50 s later. The worker
// came back meanwhile with the job's copy finished.
// A pass on the version Courier wrote over must not carry that placement
// through, mirroring the copy's end onto the job Kueue is about to admit
// again, however long the cache stays behind.
func TestAPassOnAVersionCourierWroteOverLongAgoMirrorsNothing(t *testing.T) {
	finished, _, complete, wl, local := finishedOnW1()
	var writes []string
	manager := fakeClient(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		writes = append(writes, fmt.Sprintf("%T", obj))
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}, managerObjects(wl, local)...)
	w1 := fakeClient(interceptor.Funcs{}, workloadCopy(finished()), jobCopy(t, complete))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1)})
	cached := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), cached); err != nil {
		t.Fatal(err)
	}
	r.exp.WroteOver(cached.UID, cached.ResourceVersion, now.Add(-50*time.Second))

	reconcileOnce(t, r)
	if len(writes) != 0 {
		t.Errorf("status writes on a version Courier wrote over 50 s ago: %v, want none", writes)
	}
}

// The final status is mirrored, then the Workload's status write conflicts
// with Kueue's. The next pass finishes the Workload without reading the
// worker's job again, though the informer of jobs still lags.
func TestAConflictAfterTheFinalSyncReadsTheWorkerOnce(t *testing.T) {
	finished, running, complete, wl, local := finishedOnW1()

	conflicted := false
	manager := fakeClient(statusRefusedOnce(&conflicted), managerObjects(wl, local)...)
	jobCopyObj := jobCopy(t, complete)
	jobCopyObj.SetUID("copy-uid")
	lagging := jobCopy(t, running)
	lagging.SetUID("copy-uid")
	informer := fakeClient(interceptor.Funcs{}, workloadCopy(finished()), lagging)
	reads := 0
	api := fakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == trainer.TrainJobKind {
			reads++
		}
		return c.Get(ctx, key, obj, opts...)
	}}, workloadCopy(finished()), jobCopyObj)
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", informer, api)})

	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)}
	for range 2 {
		_, _ = r.Reconcile(context.Background(), req)
	}
	if !conflicted {
		t.Fatal("the Workload's status was never written")
	}
	gotWl := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), gotWl); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(gotWl.Status.Conditions, kueue.WorkloadFinished) {
		t.Errorf("manager Workload is not Finished after the second pass: %+v", gotWl.Status.Conditions)
	}
	got := &trainer.TrainJob{}
	if err := manager.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tj"}, got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, trainer.TrainJobComplete) {
		t.Errorf("manager TrainJob is not Complete: %+v", got.Status.Conditions)
	}
	if reads != 1 {
		t.Errorf("the worker's job was read %d times, want once", reads)
	}
}

// Courier created the Workload copy; the worker's informer has not
// delivered it when the next pass comes. That pass creates nothing more.
func TestACopyJustCreatedIsNotCreatedAgain(t *testing.T) {
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	creates := map[string]int{}
	workers := fakeRemotes{}
	for _, name := range []string{"w1", "w2"} {
		// Writes go through the informer's client to the API server, and
		// the informer delivers nothing.
		api := fakeClient(interceptor.Funcs{})
		informer := fakeClient(interceptor.Funcs{Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates[name]++
			return api.Create(ctx, obj, opts...)
		}})
		workers[name] = newWorker(name, informer, api)
	}
	r := newReconciler(manager, workers)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)}
	var result reconcile.Result
	for range 3 {
		var err error
		if result, err = r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	total := 0
	for _, n := range creates {
		total += n
	}
	if total != 1 {
		t.Errorf("Workload copies created over 3 passes: %v, want one in all", creates)
	}
	if result.RequeueAfter == 0 || result.RequeueAfter > expect.CreatedTTL {
		t.Errorf("RequeueAfter = %s, want a requeue within %s in case the copy is gone", result.RequeueAfter, expect.CreatedTTL)
	}
}

// The same for the job copy: created on the worker that admitted, not yet
// delivered by the informer when the next passes come.
func TestAJobJustCreatedIsNotCreatedAgain(t *testing.T) {
	wl := managerWl().Nominated("w1").Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	api := fakeClient(interceptor.Funcs{})
	creates := 0
	informer := fakeClient(interceptor.Funcs{Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		creates++
		return api.Create(ctx, obj, opts...)
	}}, workloadCopy(remoteCopy().Admit(t0)))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", informer, api)})
	for range 3 {
		reconcileOnce(t, r)
	}
	if creates != 1 {
		t.Errorf("job copies created over 3 passes: %d, want 1", creates)
	}
	expectJobOn(t, api, true)
}

// The manager's Kueue finished the Workload from the job's mirrored final
// status, as it does once Courier leaves it the finish: the copies go, in
// one pass or over several (a delete refused once), and no event reports
// their removal, which is routine; the finish is Kueue's to report.
func TestAFinishedWorkloadsCopiesGoWithoutEvents(t *testing.T) {
	cases := map[string]struct {
		refuseOnce bool
	}{
		"in one pass":                    {},
		"over several, a delete refused": {refuseOnce: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			finished, _, complete, wl, _ := finishedOnW1()
			wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue,
				Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully", LastTransitionTime: metav1.NewTime(t0)})
			manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, complete.Obj())...)
			refused := !tc.refuseOnce
			w1 := fakeClient(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if !refused {
					refused = true
					return apierrors.NewConflict(kueue.Resource("workloads"), obj.GetName(), errors.New("changed meanwhile"))
				}
				return c.Delete(ctx, obj, opts...)
			}}, workloadCopy(finished()), jobCopy(t, complete))
			w2 := fakeClient(interceptor.Funcs{}, workloadCopy(remoteCopy()))
			r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)})

			for range 3 {
				reconcileOnce(t, r)
			}
			expectNoCopies(t, w1)
			expectNoCopies(t, w2)
			var got []string
			for recorded := r.actor.Recorder.(*events.FakeRecorder).Events; len(recorded) > 0; {
				got = append(got, <-recorded)
			}
			if len(got) > 0 {
				t.Errorf("events = %q, want none", got)
			}
		})
	}
}

// A preemption gate Courier opened counts as open before the worker's
// informer shows it: otherwise the next pass opens the other worker's
// gate too, and both workers preempt for one job.
func TestAGateCourierOpenedKeepsTheOtherShut(t *testing.T) {
	wl := managerWl().Nominated("w1", "w2").Check(check, kueue.CheckStatePending, "").Obj()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, trainJob().Obj())...)
	opened := map[string]int{}
	workers := fakeRemotes{}
	for i, name := range []string{"w1", "w2"} {
		blocked := now.Add(-time.Duration(2-i) * time.Minute)
		copy := workloadCopy(remoteCopy().Condition(kueue.WorkloadBlockedOnPreemptionGates, metav1.ConditionTrue, kueue.PreemptionGated, blocked))
		copy.Spec.PreemptionGates = []kueue.PreemptionGate{{Name: courier.PreemptionGate}}
		copy.Status.PreemptionGates = []kueue.PreemptionGateState{{Name: courier.PreemptionGate, Position: kueue.PreemptionGatePositionClosed, LastTransitionTime: metav1.NewTime(t0)}}
		// The informer keeps showing the gate closed.
		informer := fakeClient(interceptor.Funcs{SubResourcePatch: func(_ context.Context, _ client.Client, _ string, _ client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			opened[name]++
			return nil
		}}, copy)
		workers[name] = newWorker(name, informer, fakeClient(interceptor.Funcs{}, copy.DeepCopy()))
		workers[name].SetPreemptionGates(courier.PreemptionGatesEnabled)
	}
	r := newReconciler(manager, workers)
	for range 3 {
		reconcileOnce(t, r)
	}
	if diff := cmp.Diff(map[string]int{"w1": 1}, opened); diff != "" {
		t.Errorf("preemption gates opened over 3 passes (-want +got):\n%s", diff)
	}
}
