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
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestOwnWrites(t *testing.T) {
	w := newOwnWrites()
	w.note("wl", "10", t0)
	w.note("wl", "11", t0.Add(time.Second))
	cases := map[string]struct {
		version string
		at      time.Time
		want    bool
	}{
		"the version the first write of a pass replaced":                {version: "10", at: t0.Add(time.Second), want: true},
		"the version the second write replaced":                         {version: "11", at: t0.Add(time.Second), want: true},
		"the version Courier wrote":                                     {version: "12", at: t0.Add(time.Second)},
		"a cache 50 s behind, after the manager's API server restarted": {version: "11", at: t0.Add(51 * time.Second), want: true},
		"long after the writes":                                         {version: "11", at: t0.Add(time.Second + writtenTTL + time.Millisecond)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := w.stale("wl", tc.version, tc.at); got != tc.want {
				t.Errorf("stale(%q) = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
	if w.stale("other", "10", t0) {
		t.Error("another Workload's version is stale")
	}
}

func TestOwnWritesForgetsExpiredWorkloads(t *testing.T) {
	w := newOwnWrites()
	w.note("old", "10", t0)
	w.note("recent", "20", t0.Add(writtenTTL+2*time.Second))
	w.note("new", "30", t0.Add(2*writtenTTL+time.Second))
	if _, ok := w.byUID["old"]; ok {
		t.Error("a Workload written more than a TTL ago is still remembered")
	}
	if _, ok := w.byUID["recent"]; !ok {
		t.Error("a Workload written within the TTL is forgotten")
	}
}

// Once a pass reads a version none of Courier's writes replaced, the cache
// holds them all: they are forgotten, however recent.
func TestOwnWritesForgottenOnceTheCacheCaughtUp(t *testing.T) {
	w := newOwnWrites()
	w.note("wl", "10", t0)
	w.note("wl", "11", t0)
	if !w.behind("wl", "11", t0) {
		t.Fatal("a version Courier wrote over is not behind")
	}
	if w.behind("wl", "12", t0) {
		t.Fatal("the version Courier wrote is behind")
	}
	if _, ok := w.byUID["wl"]; ok {
		t.Error("the writes are remembered after the cache caught up with them")
	}
}

// A write the API server stored nothing new for brings no event: a pass
// must not wait for one.
func TestWroteOver(t *testing.T) {
	cases := map[string]struct {
		stored string
		want   bool
	}{
		"a write that stored a new version": {stored: "11", want: true},
		"a write that changed nothing":      {stored: "10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{written: newOwnWrites(), now: func() time.Time { return t0 }}
			r.wroteOver(&metav1.ObjectMeta{UID: "wl", ResourceVersion: tc.stored}, "10")
			if got := r.written.stale("wl", "10", t0); got != tc.want {
				t.Errorf("the version written over is awaited: %v, want %v", got, tc.want)
			}
		})
	}
}

// Measured at 0.5 TrainJobs/s: one dispatch in twelve took a second more.
// Courier's nomination conflicted with Kueue's write of PodsReady, whose
// event the predicate dropped, and the next pass waited for the backstop.
// A refused write now awaits the newer version, whatever it changed.
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
	if !workloadChanged(r.written, r.now).Update(event.UpdateEvent{ObjectOld: read, ObjectNew: kueues}) {
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
	wl := managerWl().Check(check, kueue.CheckStatePending, "").Obj()
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
	recorded := r.recorder.(*events.FakeRecorder).Events
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

// Seen on the bench's clusters: a nomination refused for a conflict left
// its copy on worker-1, whose Kueue admitted it before the next pass. That
// pass found no nomination on the manager's Workload, ranked worker-1 below
// worker-2 by the copy's own usage, and moved the copy there: two writes to
// the workers that admitted nothing sooner. The copy now keeps its place.
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
		return cluster.NewRemote(name, c, c, workloadGVK, trainer.GroupVersion.WithKind(trainer.TrainJobKind),
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
