package benchstack

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
)

func TestFreeFinish(t *testing.T) {
	complete := metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted"}
	failed := metav1.Condition{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue, Reason: "JobsFailed"}
	job := func(suspended bool, conds ...metav1.Condition) *trainer.TrainJob {
		j := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}, Spec: trainer.TrainJobSpec{Suspend: ptr.To(suspended)}}
		j.Status.Conditions = conds
		return j
	}
	deleting := func(j *trainer.TrainJob) *trainer.TrainJob {
		j.DeletionTimestamp = ptr.To(metav1.Now())
		return j
	}
	cases := map[string]struct {
		job, remote *trainer.TrainJob
		wantConds   []metav1.Condition
		wantDelete  bool
	}{
		"no copy yet":                                  {job: job(false)},
		"the copy running":                             {job: job(false), remote: job(false)},
		"the copy complete, the job still held":        {job: job(true), remote: job(false, complete)},
		"the copy complete: the job marked so":         {job: job(false), remote: job(false, complete), wantConds: []metav1.Condition{complete}},
		"the copy failed: the job marked so":           {job: job(false), remote: job(false, failed), wantConds: []metav1.Condition{failed}},
		"the job final: the copy deleted":              {job: job(false, complete), remote: job(false, complete), wantDelete: true},
		"the copy being deleted already":               {job: job(false, complete), remote: deleting(job(false, complete))},
		"the job being deleted: its copy left for now": {job: deleting(job(false)), remote: job(false, complete)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			next, drop := freeFinish(tc.job, tc.remote)
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("freeFinish changed its argument (-before +after):\n%s", diff)
			}
			if drop != tc.wantDelete {
				t.Errorf("delete the copy = %v, want %v", drop, tc.wantDelete)
			}
			if tc.wantConds == nil {
				if next != nil {
					t.Errorf("freeFinish = %+v, want no write", next.Status.Conditions)
				}
				return
			}
			if next == nil {
				t.Fatal("freeFinish wrote nothing, want the copy's end")
			}
			if diff := cmp.Diff(tc.wantConds, next.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "Message", "LastTransitionTime")); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFreeCopies(t *testing.T) {
	job := &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid", ResourceVersion: "9",
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": "lq", runLabel: "r1"}},
		Spec: trainer.TrainJobSpec{Suspend: ptr.To(true), ManagedBy: ptr.To(adapter.TrainJobManagedBy),
			RuntimeRef: trainer.RuntimeRef{Name: "torch"}},
	}
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "trainjob-j-1", Namespace: "ns", UID: "wl-uid",
		OwnerReferences: []metav1.OwnerReference{{Kind: trainer.TrainJobKind, Name: "j", UID: "job-uid", Controller: ptr.To(true)}}},
		Spec: kueue.WorkloadSpec{QueueName: "lq"}}
	wlCopy, jobCopy, err := freeCopies(wl, job)
	if err != nil {
		t.Fatalf("freeCopies: %v", err)
	}
	type seen struct {
		WorkloadName, WorkloadOrigin, ManagerUID string
		WorkloadOwners                           int
		JobName, JobOrigin, Prebuilt, Queue, Run string
		ManagedBy                                bool
		JobUID, JobVersion                       string
	}
	_, managedBy := jobCopy.Object["spec"].(map[string]any)["managedBy"]
	got := seen{
		WorkloadName: wlCopy.Name, WorkloadOrigin: wlCopy.Labels[courier.OriginLabel], ManagerUID: wlCopy.Annotations[courier.ManagerUIDAnnotation],
		WorkloadOwners: len(wlCopy.OwnerReferences),
		JobName:        jobCopy.GetName(), JobOrigin: jobCopy.GetLabels()[courier.OriginLabel], Prebuilt: jobCopy.GetLabels()[adapter.PrebuiltWorkloadLabel],
		Queue: jobCopy.GetLabels()["kueue.x-k8s.io/queue-name"], Run: jobCopy.GetLabels()[runLabel],
		ManagedBy: managedBy, JobUID: string(jobCopy.GetUID()), JobVersion: jobCopy.GetResourceVersion(),
	}
	want := seen{WorkloadName: "trainjob-j-1", WorkloadOrigin: freeOrigin, ManagerUID: "wl-uid",
		JobName: "j", JobOrigin: freeOrigin, Prebuilt: "trainjob-j-1", Queue: "lq", Run: "r1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the copies (-want +got):\n%s", diff)
	}
	if job.Spec.ManagedBy == nil || job.Labels[courier.OriginLabel] != "" {
		t.Errorf("freeCopies changed the manager's job: %+v", job)
	}
}

func TestFreeWorker(t *testing.T) {
	workers := []string{"worker-1", "worker-2"}
	on := map[string]int{}
	for i := range 1000 {
		name := fmt.Sprintf("cmp-abcde-%04d", i)
		w := freeWorker(name, workers)
		if again := freeWorker(name, workers); again != w {
			t.Fatalf("freeWorker(%q) = %s, then %s", name, w, again)
		}
		on[w]++
	}
	for _, w := range workers {
		if on[w] < 400 {
			t.Errorf("%s got %d of 1000 jobs, want at least 400: %v", w, on[w], on)
		}
	}
}

func TestFreeVerdict(t *testing.T) {
	owned := func(apiVersion, kind string) *kueue.Workload {
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "wl", Namespace: "ns"}}
		if kind != "" {
			wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "job", UID: "u", Controller: ptr.To(true)}}
		}
		return wl
	}
	cases := map[string]struct {
		wl          *kueue.Workload
		wantState   kueue.CheckState
		wantMessage string
	}{
		"a TrainJob's Workload: Ready": {
			wl:          owned(trainer.GroupVersion.String(), trainer.TrainJobKind),
			wantState:   kueue.CheckStateReady,
			wantMessage: "The bench's free dispatcher dispatched the job.",
		},
		"a batch Job's Workload: Rejected, naming the owner": {
			wl:        owned("batch/v1", "Job"),
			wantState: kueue.CheckStateRejected,
			wantMessage: "The bench's free dispatcher copies TrainJobs only, and this Workload belongs to batch/v1 Job job: " +
				"run such jobs through Courier (--systems courier).",
		},
		"a TrainJob kind of another group: Rejected": {
			wl:        owned("example.com/v1", trainer.TrainJobKind),
			wantState: kueue.CheckStateRejected,
			wantMessage: "The bench's free dispatcher copies TrainJobs only, and this Workload belongs to example.com/v1 TrainJob job: " +
				"run such jobs through Courier (--systems courier).",
		},
		"no owner: Rejected": {
			wl:        owned("", ""),
			wantState: kueue.CheckStateRejected,
			wantMessage: "The bench's free dispatcher copies TrainJobs only, and this Workload has no controlling owner: " +
				"run such jobs through Courier (--systems courier).",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state, message := freeVerdict(tc.wl)
			if diff := cmp.Diff([]string{string(tc.wantState), tc.wantMessage}, []string{string(state), message}); diff != "" {
				t.Errorf("freeVerdict (-want +got):\n%s", diff)
			}
		})
	}
}
