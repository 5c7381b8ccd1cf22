package dispatch

import (
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

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
