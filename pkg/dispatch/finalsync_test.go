package dispatch

import (
	"context"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The informer already holds the job copy that shows the job's end: the
// final status comes from it, and the worker is not asked again. That read
// was one request to the worker per job.
func TestFinishFromACachedFinishedCopyReadsNothing(t *testing.T) {
	finished, _, complete, wl, local := finishedOnW1()
	manager := fakeClient(interceptor.Funcs{}, managerObjects(wl, local)...)
	cached := jobCopy(t, complete)
	cached.SetUID("copy-uid") // As the worker's API server gives it: Courier remembers the mirror by it.
	informer := fakeClient(interceptor.Funcs{}, workloadCopy(finished()), cached)
	reads := 0
	api := fakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == trainer.TrainJobKind {
			reads++
		}
		return c.Get(ctx, key, obj, opts...)
	}}, workloadCopy(finished()), jobCopy(t, complete))
	r := newReconciler(manager, fakeRemotes{"w1": newWorker("w1", informer, api)})
	reconcileOnce(t, r)
	// The manager's Kueue, which would finish the Workload from the status
	// mirrored, does not run here: Courier does once the grace is out.
	mirrored := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), mirrored); err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(mirrored.Status.Conditions, kueue.WorkloadFinished) {
		t.Errorf("the Workload finished with the mirror, before the manager's Kueue had its grace")
	}
	r.now = func() time.Time { return now.Add(kueueFinishGrace) }
	reconcileOnce(t, r)

	expectCompleteAndFinished(t, manager, wl)
	if reads != 0 {
		t.Errorf("the worker's job was read %d times, want none", reads)
	}
}

// expectCompleteAndFinished checks that the manager's TrainJob shows
// Complete and its Workload Finished, and returns the TrainJob.
func expectCompleteAndFinished(t *testing.T, manager client.Client, wl *kueue.Workload) *trainer.TrainJob {
	t.Helper()
	got := &trainer.TrainJob{}
	if err := manager.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tj"}, got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, trainer.TrainJobComplete) {
		t.Errorf("manager TrainJob is not Complete: %+v", got.Status.Conditions)
	}
	gotWl := &kueue.Workload{}
	if err := manager.Get(context.Background(), client.ObjectKeyFromObject(wl), gotWl); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(gotWl.Status.Conditions, kueue.WorkloadFinished) {
		t.Errorf("manager Workload is not Finished: %+v", gotWl.Status.Conditions)
	}
	return got
}
