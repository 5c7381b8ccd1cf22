package dispatch

import (
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/runtimepatch"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

func TestJobChanged(t *testing.T) {
	cases := map[string]struct {
		update func(*trainer.TrainJob)
		want   bool
	}{
		"a mirrored status alone is skipped": {
			update: func(j *trainer.TrainJob) {
				j.ResourceVersion = "2"
				j.Status.JobsStatus = []trainer.JobStatus{{Name: "node", Active: new(int32(1))}}
			},
		},
		"the spec, a new generation": {
			update: func(j *trainer.TrainJob) { j.Generation++; j.Spec.Suspend = new(false) },
			want:   true,
		},
		"a label": {
			update: func(j *trainer.TrainJob) { j.Labels["team"] = "b" },
			want:   true,
		},
		"an annotation": {
			update: func(j *trainer.TrainJob) { j.Annotations = map[string]string{"note": "x"} },
			want:   true,
		},
		"a finalizer": {
			update: func(j *trainer.TrainJob) { j.Finalizers = []string{"example.com/hold"} },
			want:   true,
		},
		"its deletion": {
			update: func(j *trainer.TrainJob) { j.DeletionTimestamp = &metav1.Time{Time: time.Now()} },
			want:   true,
		},
		"an owner": {
			update: func(j *trainer.TrainJob) {
				j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u"}}
			},
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := trainertesting.MakeTrainJob("job", "team-a").Queue("queue").Obj()
			old.Generation = 1
			cur := old.DeepCopy()
			tc.update(cur)
			if got := jobChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("jobChanged() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWorkloadChanged(t *testing.T) {
	podsReady := func(w *kueuetesting.WorkloadWrapper) {
		w.Condition(kueue.WorkloadPodsReady, metav1.ConditionTrue, "PodsReady", t0)
	}
	cases := map[string]struct {
		// before, if set, makes the Workload the update starts from.
		before func(*kueuetesting.WorkloadWrapper)
		update func(*kueuetesting.WorkloadWrapper)
		// manager and copy: whether a pass is queued for the change on the
		// manager Workload, and on a Workload copy.
		manager, copy bool
	}{
		"Admitted, after Courier's Ready: read on copies alone": {
			update: func(w *kueuetesting.WorkloadWrapper) { w.Admit(t0) },
			copy:   true,
		},
		"PodsReady: read on neither": {
			update: podsReady,
		},
		"a finalizer released: read on neither": {
			update: func(w *kueuetesting.WorkloadWrapper) { w.Finalizers = nil },
		},
		"PodsReady with an admission check's change": {
			update:  func(w *kueuetesting.WorkloadWrapper) { podsReady(w); w.Check(check, kueue.CheckStateReady, "") },
			manager: true, copy: true,
		},
		"the Workload finished": {
			update: func(w *kueuetesting.WorkloadWrapper) {
				w.Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0)
			},
			manager: true, copy: true,
		},
		"a condition changed its reason": {
			update: func(w *kueuetesting.WorkloadWrapper) {
				w.Condition(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReservedAgain", time.Time{})
			},
			manager: true, copy: true,
		},
		"evicted": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Evicted("Preempted", 1) },
			manager: true, copy: true,
		},
		"deactivated, a new generation": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Active(false); w.Generation++ },
			manager: true, copy: true,
		},
		"its deletion": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Deleting(t0) },
			manager: true, copy: true,
		},
		"Courier's placement record": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Annotation("courier.dev/placement", `{"cluster":"a"}`) },
			manager: true, copy: true,
		},
		"an owner, set by the worker's Kueue: read on the manager alone": {
			update: func(w *kueuetesting.WorkloadWrapper) {
				w.Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "job", "job-uid")
			},
			manager: true,
		},
		"a label of the worker's Kueue: read on the manager alone": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Label("kueue.x-k8s.io/job-uid", "job-uid") },
			manager: true,
		},
		"Courier's label": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Label(courier.OriginLabel, "elsewhere") },
			manager: true, copy: true,
		},
		"Courier's label changed": {
			before:  func(w *kueuetesting.WorkloadWrapper) { w.Label(courier.OriginLabel, "here") },
			update:  func(w *kueuetesting.WorkloadWrapper) { w.Label(courier.OriginLabel, "elsewhere") },
			manager: true, copy: true,
		},
		"Courier's label removed": {
			before:  func(w *kueuetesting.WorkloadWrapper) { w.Label(courier.OriginLabel, "here") },
			update:  func(w *kueuetesting.WorkloadWrapper) { delete(w.Labels, courier.OriginLabel) },
			manager: true, copy: true,
		},
		"a label of the worker's Kueue removed, Courier's kept: read on the manager alone": {
			before: func(w *kueuetesting.WorkloadWrapper) {
				w.Label(courier.OriginLabel, "here").Label("kueue.x-k8s.io/job-uid", "job-uid")
			},
			update:  func(w *kueuetesting.WorkloadWrapper) { delete(w.Labels, "kueue.x-k8s.io/job-uid") },
			manager: true,
		},
		"a resync, which changes nothing: the informers' second look": {
			update:  func(w *kueuetesting.WorkloadWrapper) { w.ResourceVersion = "1" },
			manager: true, copy: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := local().Check(check, kueue.CheckStatePending, "")
			w.ResourceVersion, w.Generation, w.Finalizers = "1", 1, []string{kueue.ResourceInUseFinalizerName}
			if tc.before != nil {
				tc.before(w)
			}
			old := w.DeepCopy()
			w.ResourceVersion = "2"
			tc.update(w)
			cur := w.Obj()
			if got := workloadChanged(expect.New(), time.Now).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.manager {
				t.Errorf("workloadChanged() = %v, want %v", got, tc.manager)
			}
			if got := copyChangeMatters(old, cur, nil); got != tc.copy {
				t.Errorf("copyChangeMatters() = %v, want %v", got, tc.copy)
			}
		})
	}
}

// A nomination that conflicted with Kueue's write of PodsReady, which the
// predicate lets through no more, must not leave the pass to the backstop.
func TestWorkloadChangedLetsThroughTheVersionAPassAwaits(t *testing.T) {
	w := local().Check(check, kueue.CheckStatePending, "")
	w.ResourceVersion = "1"
	old := w.DeepCopy()
	w.ResourceVersion = "2"
	w.Condition(kueue.WorkloadPodsReady, metav1.ConditionFalse, "WaitForStart", t0)
	cur := w.Obj()
	awaited := expect.New()
	update := event.UpdateEvent{ObjectOld: old, ObjectNew: cur}
	if workloadChanged(awaited, time.Now).Update(update) {
		t.Fatal("a change of PodsReady alone queued a pass")
	}
	awaited.WroteOver(cur.UID, "1", time.Now())
	if !workloadChanged(awaited, time.Now).Update(update) {
		t.Error("the version after one a pass found behind did not queue a pass")
	}
}

func TestCopyChangeMattersForEveryCreationDeletionAndJob(t *testing.T) {
	wl := local().Obj()
	job := trainertesting.MakeTrainJob("job", "team-a").Obj()
	jobNow := job.DeepCopy()
	jobNow.ResourceVersion = "2"
	cases := map[string]struct {
		old, cur client.Object
	}{
		"a Workload copy created":     {cur: wl},
		"a Workload copy deleted":     {cur: wl},
		"a job copy's status changed": {old: job, cur: jobNow},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !copyChangeMatters(tc.old, tc.cur, nil) {
				t.Error("copyChangeMatters() = false, want true")
			}
		})
	}
}

func TestCopyChangeMattersForJobCopies(t *testing.T) {
	started := trainertesting.MakeTrainJob("job", "team-a").Label("team", "a").Suspend(true).
		RuntimePatch("example.com/tool", "tier", "gold")
	job := func(w *trainertesting.TrainJobWrapper) *unstructured.Unstructured {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.Obj())
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: obj}
	}
	old := job(started)
	old.SetResourceVersion("1")
	old.SetGeneration(1)
	then := func(f func(*trainertesting.TrainJobWrapper)) *unstructured.Unstructured {
		w := &trainertesting.TrainJobWrapper{TrainJob: *started.Obj().DeepCopy()}
		w.ResourceVersion, w.Generation = "2", 1
		f(w)
		return job(w)
	}
	cases := map[string]struct {
		cur  *unstructured.Unstructured
		want bool
	}{
		"the worker's Kueue's RuntimePatches entry": {
			cur: then(func(w *trainertesting.TrainJobWrapper) {
				w.Generation++
				w.RuntimePatch(runtimepatch.KueueManager, "zone", "a")
			}),
		},
		"nothing but its version": {
			cur: then(func(w *trainertesting.TrainJobWrapper) {}),
		},
		"resumed by the worker's Kueue": {
			cur: then(func(w *trainertesting.TrainJobWrapper) { w.Generation++; w.Suspend(false) }),
		},
		"another manager's RuntimePatches entry": {
			cur: then(func(w *trainertesting.TrainJobWrapper) {
				w.Generation++
				w.RuntimePatch("example.com/other", "tier", "silver")
			}),
			want: true,
		},
		"its status": {
			cur:  then(func(w *trainertesting.TrainJobWrapper) { w.JobsStatus("node", 1, 0) }),
			want: true,
		},
		"a label": {
			cur:  then(func(w *trainertesting.TrainJobWrapper) { w.Label("team", "b") }),
			want: true,
		},
		"a finalizer": {
			cur:  then(func(w *trainertesting.TrainJobWrapper) { w.Finalizers = []string{"example.com/hold"} }),
			want: true,
		},
		"its deletion": {
			cur:  then(func(w *trainertesting.TrainJobWrapper) { w.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			want: true,
		},
		"a resync": {
			cur:  then(func(w *trainertesting.TrainJobWrapper) { w.ResourceVersion = "1" }),
			want: true,
		},
	}
	trainJob := adapter.NewTrainJob()
	adapters := map[schema.GroupKind]adapter.Adapter{trainJob.GVK().GroupKind(): trainJob}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := copyChangeMatters(old, tc.cur, adapters); got != tc.want {
				t.Errorf("copyChangeMatters() = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a kind Courier does not carry", func(t *testing.T) {
		cur := then(func(w *trainertesting.TrainJobWrapper) {
			w.Generation++
			w.RuntimePatch(runtimepatch.KueueManager, "zone", "a")
		})
		if !copyChangeMatters(old, cur, nil) {
			t.Error("copyChangeMatters() = false, want true")
		}
	})
}

// A worker's change queues its manager Workload's pass, but for a copy
// deleted once that Workload finished, which no plan acts on.
func TestOnRemoteChangeQueues(t *testing.T) {
	running := managerWl().Obj()
	finished := managerWl().Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, t0).Obj()
	copyNow := func() *kueue.Workload {
		c := workloadCopy(remoteCopy())
		c.ResourceVersion = "2"
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue})
		return c
	}
	cases := map[string]struct {
		manager *kueue.Workload
		old     client.Object
		deleted bool
		want    int
	}{
		"a copy deleted, the Workload running":           {manager: running, deleted: true, want: 1},
		"a copy deleted, the Workload finished":          {manager: finished, deleted: true},
		"a copy deleted, the Workload gone":              {deleted: true, want: 1},
		"a copy created, the Workload finished":          {manager: finished, want: 1},
		"a copy's status changed, the Workload finished": {manager: finished, old: workloadCopy(remoteCopy()), want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var objs []client.Object
			if tc.manager != nil {
				objs = append(objs, tc.manager)
			}
			r := newReconciler(fakeClient(interceptor.Funcs{}, objs...), fakeRemotes{})
			r.OnRemoteChange("w1", tc.old, copyNow(), tc.deleted)
			if got := len(r.remote); got != tc.want {
				t.Errorf("queued %d passes, want %d", got, tc.want)
			}
		})
	}
}

func TestCourierWorkload(t *testing.T) {
	isCourier := func(name string) bool { return name == check }
	cases := map[string]struct {
		wl   *kueue.Workload
		want bool
	}{
		"Courier's check, Pending": {
			wl:   local().Check(check, kueue.CheckStatePending, "").Obj(),
			want: true,
		},
		"Courier's check beside another": {
			wl:   local().Check("provisioning", kueue.CheckStateReady, "").Check(check, kueue.CheckStateReady, "").Obj(),
			want: true,
		},
		"placed by Courier, its check since removed": {
			wl:   local().Annotation(courier.PlacementAnnotation, `{"cluster":"a"}`).Obj(),
			want: true,
		},
		"another dispatcher's check alone": {
			wl: local().Check("multikueue", kueue.CheckStatePending, "").Obj(),
		},
		"no check and no placement": {
			wl: local().Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := courierWorkload(tc.wl, isCourier); got != tc.want {
				t.Errorf("courierWorkload() = %v, want %v", got, tc.want)
			}
		})
	}
}
