package benchstack

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestPhaseTrackerWorkerSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	managerWl := func(name, job string) *kueue.Workload {
		return kueuetesting.MakeWorkload(name, "bench").Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", job, "u-"+job).ReserveQuota("cq").Obj()
	}
	copyWl := func(name string, reserved bool) *kueue.Workload {
		w := kueuetesting.MakeWorkload(name, "bench")
		if reserved {
			w.ReserveQuota("cq")
		}
		return w.Obj()
	}
	jobCopy := func(name, uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetUID(types.UID("u-" + uid))
		return u
	}
	type steps struct{ QuotaReserved, WorkerQuota, OnWorker time.Time }
	cases := map[string]struct {
		record func(*phaseTracker)
		want   steps
	}{
		"the first quota on any worker and the first copy on any worker": {
			record: func(tr *phaseTracker) {
				tr.managerWorkload(managerWl("wl-a", "cmp-x-0000"), at(1))
				tr.workerWorkload(copyWl("wl-a", false), at(1.5))
				tr.workerWorkload(copyWl("wl-a", true), at(2))
				tr.workerWorkload(copyWl("wl-a", true), at(3))
				tr.workerJob("w1", jobCopy("cmp-x-0000", "1"), false, at(4))
				tr.workerJob("w2", jobCopy("cmp-x-0000", "2"), false, at(5))
			},
			want: steps{QuotaReserved: at(1), WorkerQuota: at(2), OnWorker: at(4)},
		},
		"a worker's quota delivered before the manager's Workload": {
			record: func(tr *phaseTracker) {
				tr.workerWorkload(copyWl("wl-a", true), at(1))
				tr.workerWorkload(copyWl("wl-a", true), at(2))
				tr.managerWorkload(managerWl("wl-a", "cmp-x-0000"), at(3))
			},
			want: steps{QuotaReserved: at(3), WorkerQuota: at(1)},
		},
		"a copy's deletion is no sighting of it, nor are other runs' jobs and Workloads": {
			record: func(tr *phaseTracker) {
				tr.managerWorkload(managerWl("wl-a", "cmp-x-0000"), at(1))
				tr.managerWorkload(managerWl("wl-b", "cmp-y-0000"), at(1))
				tr.workerWorkload(copyWl("wl-b", true), at(2))
				tr.workerJob("w1", jobCopy("cmp-y-0000", "1"), false, at(2))
				tr.workerJob("w1", jobCopy("cmp-x-0000", "1"), true, at(3))
			},
			want: steps{QuotaReserved: at(1)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newPhaseTracker("cmp-x-", "courier")
			tc.record(tr)
			j := tr.snapshot([]string{"cmp-x-0000"})[0]
			got := steps{QuotaReserved: j.quotaReserved, WorkerQuota: j.workerQuota, OnWorker: j.onWorker}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPhaseTrackerRunning(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	copyOf := func(suspend *bool) *trainer.TrainJob {
		return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "cmp-x-0000", UID: "u"}, Spec: trainer.TrainJobSpec{Suspend: suspend}}
	}
	yes, no := true, false
	cases := map[string]struct {
		record      func(*phaseTracker)
		wantRunning time.Time
	}{
		"running once a copy is seen unsuspended, not when it appears suspended": {
			record: func(tr *phaseTracker) {
				tr.workerJob("w1", copyOf(&yes), false, at(1))
				tr.workerJob("w1", copyOf(&no), false, at(2))
				tr.workerJob("w1", copyOf(&no), false, at(3))
			},
			wantRunning: at(2),
		},
		"a copy made unsuspended runs at once": {
			record:      func(tr *phaseTracker) { tr.workerJob("w1", copyOf(nil), false, at(1)) },
			wantRunning: at(1),
		},
		"a deleted copy is not running": {
			record: func(tr *phaseTracker) {
				tr.workerJob("w1", copyOf(&yes), false, at(1))
				tr.workerJob("w1", copyOf(&no), true, at(2))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newPhaseTracker("cmp-x-", "courier")
			tc.record(tr)
			if got := tr.snapshot([]string{"cmp-x-0000"})[0].running; !got.Equal(tc.wantRunning) {
				t.Errorf("running at %v, want %v", got, tc.wantRunning)
			}
		})
	}
}
