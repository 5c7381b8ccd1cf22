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

	"github.com/courierdev/courier/pkg/adapter"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

func TestStatusWait(t *testing.T) {
	const delay = 2 * time.Second
	running := trainertesting.MakeTrainJob("job", "team-a").Label("team", "a").
		Condition("Created", metav1.ConditionTrue, "JobsCreated").JobsStatus("node", 1, 0)
	job := func(w *trainertesting.TrainJobWrapper) client.Object {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w.Obj())
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: obj}
	}
	then := func(f func(*trainertesting.TrainJobWrapper)) client.Object {
		w := &trainertesting.TrainJobWrapper{TrainJob: *running.Obj().DeepCopy()}
		f(w)
		return job(w)
	}
	podGroup := &unstructured.Unstructured{}
	podGroup.SetGroupVersionKind(adapter.PodGroupGVK)
	podGroup.SetName("job")
	wl := kueuetesting.MakeWorkload("wl", "team-a").Obj()

	cases := map[string]struct {
		old, cur client.Object
		delay    time.Duration
		want     time.Duration
	}{
		"a running copy's status waits": {
			old:  job(running),
			cur:  then(func(w *trainertesting.TrainJobWrapper) { w.Status.JobsStatus[0].Ready = new(int32(1)) }),
			want: delay,
		},
		"the status that ends the job does not": {
			old: job(running),
			cur: then(func(w *trainertesting.TrainJobWrapper) {
				w.Condition(trainer.TrainJobComplete, metav1.ConditionTrue, "JobsCompleted")
			}),
		},
		"nor the one that fails it": {
			old: job(running),
			cur: then(func(w *trainertesting.TrainJobWrapper) {
				w.Condition(trainer.TrainJobFailed, metav1.ConditionTrue, "JobsFailed")
			}),
		},
		"nor a spec change": {
			old: job(running),
			cur: then(func(w *trainertesting.TrainJobWrapper) { w.Generation++; w.Spec.Suspend = new(false) }),
		},
		"nor a label": {
			old: job(running),
			cur: then(func(w *trainertesting.TrainJobWrapper) { w.Label("team", "b") }),
		},
		"nor its deletion": {
			old: job(running),
			cur: then(func(w *trainertesting.TrainJobWrapper) { w.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
		},
		"nor its creation or removal, which come without an old object": {
			cur: job(running),
		},
		"nor a Workload copy's change": {
			old: wl,
			cur: wl.DeepCopy(),
		},
		"nor a kind Courier has no adapter for": {
			old: podGroup,
			cur: podGroup.DeepCopy(),
		},
		"nor anything when the delay is off": {
			old:   job(running),
			cur:   then(func(w *trainertesting.TrainJobWrapper) { w.Status.JobsStatus[0].Ready = new(int32(1)) }),
			delay: -1,
		},
	}
	adapters := map[schema.GroupKind]adapter.Adapter{adapter.NewTrainJob().GVK().GroupKind(): adapter.NewTrainJob()}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := delay
			if tc.delay != 0 {
				d = 0
			}
			if got := statusWait(tc.old, tc.cur, adapters, d); got != tc.want {
				t.Errorf("statusWait() = %v, want %v", got, tc.want)
			}
		})
	}
}
