package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

// A Workload whose passes keep failing (a worker down for minutes) is
// looked at again within maxErrorBackoff once they stop failing, not after
// controller-runtime's 1,000 s.
func TestPassRateLimiterCapsTheBackoff(t *testing.T) {
	limiter := passRateLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "wl"}}
	var last time.Duration
	for range 30 {
		last = limiter.When(req)
	}
	if last > maxErrorBackoff {
		t.Errorf("backoff after 30 failed passes = %s, want at most %s", last, maxErrorBackoff)
	}
	limiter.Forget(req)
	if got := limiter.When(req); got > 10*time.Millisecond {
		t.Errorf("backoff after a pass that did not fail = %s, want the first step", got)
	}
}

// A nomination that conflicted with Kueue's write of PodsReady, whose event
// the predicate drops, must not leave the next pass to the backstop: a
// refused write awaits the newer version, whatever it changed.
func TestARefusedWriteAwaitsTheNewerVersion(t *testing.T) {
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Obj()
	refused := false
	r, manager := nominationRefusedOnce(wl, &refused)
	read := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), read); err != nil {
		t.Fatal(err)
	}

	reconcileOnce(t, r)
	if !refused {
		t.Fatal("the nomination was not written")
	}
	kueues := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), kueues); err != nil {
		t.Fatal(err)
	}
	if !workloadChanged(r.exp, r.now).Update(event.UpdateEvent{ObjectOld: read, ObjectNew: kueues}) {
		t.Error("Kueue's version, after a write on the one before was refused, queued no pass")
	}
}

// nominationRefusedOnce is a reconciler for the pending wl on two workers
// whose manager refuses the first status write for a conflict, setting
// *refused.
func nominationRefusedOnce(wl *kueue.Workload, refused *bool) (*Reconciler, client.Client) {
	manager := fakeClient(statusRefusedOnce(refused), managerObjects(wl, trainJob().Obj())...)
	w1 := fakeClient(interceptor.Funcs{})
	w2 := fakeClient(interceptor.Funcs{})
	return newReconciler(manager, fakeRemotes{"w1": newWorker("w1", w1, w1), "w2": newWorker("w2", w2, w2)}), manager
}

// TestARefusedNominationIsReportedOnce refuses a pass's nomination for a
// conflict: the copies it made stay, the next pass writes the nomination,
// and the Nominated event is recorded once, by the pass whose write held.
func TestARefusedNominationIsReportedOnce(t *testing.T) {
	// Nominated before to a worker that has gone: the new nomination
	// moves, which an event reports, unlike a first one.
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Nominated("gone").Obj()
	refused := false
	r, manager := nominationRefusedOnce(wl, &refused)

	reconcileOnce(t, r)
	if !refused {
		t.Fatal("the nomination was not written")
	}
	reconcileOnce(t, r)
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.NominatedClusterNames) == 0 {
		t.Fatal("the second pass wrote no nomination")
	}
	recorded := r.actor.Recorder.(*events.FakeRecorder).Events
	var nominated []string
	for len(recorded) > 0 {
		if e := <-recorded; strings.Contains(e, " "+courier.EventNominated+" ") {
			nominated = append(nominated, e)
		}
	}
	if len(nominated) != 1 {
		t.Errorf("Nominated events: %q, want one", nominated)
	}
}

// A nomination refused for a conflict leaves its copy on w1, whose Kueue
// admits it before the next pass. That pass finds no nomination on the
// manager's Workload and must not rank w1 below w2 by the copy's own usage
// and move the copy: it keeps its place.
func TestARefusedNominationKeepsItsCopy(t *testing.T) {
	wl := managerWl().Queue("lq").Check(check, kueue.CheckStatePending, "").Obj()
	refused := false
	manager := fakeClient(statusRefusedOnce(&refused), managerObjects(wl, trainJob().Obj())...)
	queues := func() []client.Object {
		return []client.Object{
			&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			kueuetesting.MakeClusterQueue("cq").Quota("default", corev1.ResourceCPU, "8").Obj(),
			kueuetesting.MakeLocalQueue("lq", ns, "cq").Obj(),
		}
	}
	w1, w2 := fakeClient(interceptor.Funcs{}, queues()...), fakeClient(interceptor.Funcs{}, queues()...)
	withQuota := func(name string, c client.Client) *cluster.Remote {
		return cluster.NewRemote(name, c, c, workload.GVK, trainer.GroupVersion.WithKind(trainer.TrainJobKind),
			kueue.SchemeGroupVersion.WithKind("ClusterQueue"), kueue.SchemeGroupVersion.WithKind("LocalQueue"), kueue.SchemeGroupVersion.WithKind("ResourceFlavor"))
	}
	r := newReconciler(manager, fakeRemotes{"w1": withQuota("w1", w1), "w2": withQuota("w2", w2)})

	reconcileOnce(t, r)
	if !refused {
		t.Fatal("the nomination was not written")
	}
	expectOn(t, w1, &kueue.Workload{}, "trainjob-tj", true)
	// w1's Kueue reserves quota for the copy; its ClusterQueue shows the
	// usage before the informer of Workloads shows the copy admitted.
	cqs := &kueue.ClusterQueueList{}
	if err := w1.List(context.Background(), cqs); err != nil || len(cqs.Items) != 1 {
		t.Fatalf("listing the ClusterQueue: %v, %d found", err, len(cqs.Items))
	}
	cq := &cqs.Items[0]
	cq.Status = kueuetesting.MakeClusterQueue("cq").Reserved("default", corev1.ResourceCPU, "1").Obj().Status
	// The fake serves no status subresource for ClusterQueues.
	if err := w1.Update(context.Background(), cq); err != nil {
		t.Fatal(err)
	}

	reconcileOnce(t, r)
	expectOn(t, w1, &kueue.Workload{}, "trainjob-tj", true)
	expectOn(t, w2, &kueue.Workload{}, "trainjob-tj", false)
	got := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"w1"}, got.Status.NominatedClusterNames); diff != "" {
		t.Errorf("nominated clusters (-want +got):\n%s", diff)
	}
}
