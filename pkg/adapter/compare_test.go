package adapter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// runningPair is a dispatched TrainJob and its copy, started on the worker
// and one status change ahead of the manager: what a pass compares.
func runningPair(t testing.TB) (job, copy *unstructured.Unstructured, to Destination) {
	t.Helper()
	w := func() *trainertesting.TrainJobWrapper {
		return trainertesting.MakeTrainJob("tj", "ns").ManagedBy(TrainJobManagedBy).Label("team", "a").
			RuntimePatch("example.com/user", "x", "1").GPUs(8).NodeEnv("example.com/user", "EPOCHS", "3")
	}
	to = Destination{Workload: "wl", Origin: "org"}
	job = trainJob(t, w().Condition("Suspended", metav1.ConditionFalse, "Resumed").JobsStatus("node", 1, 0))
	copy, err := NewTrainJob().RemoteCopy(trainJob(t, w()), to)
	if err != nil {
		t.Fatal(err)
	}
	workerStarts(t, copy)
	status := trainJob(t, w().Condition("Suspended", metav1.ConditionFalse, "Resumed").JobsStatus("node", 0, 1).
		Condition("Complete", metav1.ConditionTrue, "JobsCompleted")).Object["status"]
	copy.Object["status"] = status
	return job, copy, to
}

// A pass reads the job and its copy from the informers' caches: comparing
// them must leave both as they were.
func TestComparingLeavesBothObjectsAlone(t *testing.T) {
	a := NewTrainJob()
	job, copy, to := runningPair(t)
	jobBefore, copyBefore := job.DeepCopy(), copy.DeepCopy()
	if _, err := a.Forward(job, copy, to); err != nil {
		t.Fatal(err)
	}
	patch, err := a.StatusPatch(job, copy)
	if err != nil || patch == nil {
		t.Fatalf("StatusPatch() = %s, %v; want a patch", patch, err)
	}
	if !a.Outcome(copy).Finished {
		t.Errorf("Outcome(copy) is not finished")
	}
	if _, err := a.ClearActivityPatch(job); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jobBefore, job); diff != "" {
		t.Errorf("the job changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(copyBefore, copy); diff != "" {
		t.Errorf("the copy changed (-before +after):\n%s", diff)
	}
}

// BenchmarkComparePass is what a pass spends comparing a dispatched
// TrainJob with its copy: forwarding, the status mirror, the outcome.
func BenchmarkComparePass(b *testing.B) {
	a := NewTrainJob()
	job, copy, to := runningPair(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Forward(job, copy, to); err != nil {
			b.Fatal(err)
		}
		if _, err := a.StatusPatch(job, copy); err != nil {
			b.Fatal(err)
		}
		a.Outcome(copy)
	}
}
