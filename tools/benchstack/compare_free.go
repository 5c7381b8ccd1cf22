package benchstack

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/tools/localcluster"
)

// The free dispatcher is the floor with each job run on a worker: the
// harness copies the Workload and the TrainJob to one worker, picked by a
// hash of the name and built by Courier's own copy rules, before it turns
// the check Ready, marks the manager's TrainJob as its copy ended, and
// deletes the copy: three writes to a worker and two to the manager per
// job, and no dispatcher process. It tells what the stack does with a
// dispatcher that costs nothing of its own; it is not a bound, since a
// dispatcher's placement and pace change what the peers do.
const freeOrigin = "bench-free"

// free reports whether f runs the jobs on the workers.
func (f *floor) free() bool { return len(f.workers) > 0 }

// informWorkers gives f a client of each worker and informers of its
// TrainJobs; a copy's event queues its manager TrainJob.
func (f *floor) informWorkers(ctx context.Context, env *localcluster.Env) error {
	f.remote = map[string]client.Client{}
	f.workers = slices.Sorted(slices.Values(env.Workers))
	for _, w := range f.workers {
		// As the dispatchers' identity there, so that the workers' audit
		// logs count the free dispatcher's requests and watch events as theirs.
		cfg, err := env.WorkerUserConfig(ctx, w)
		if err != nil {
			return err
		}
		cfg.UserAgent = floorProgram
		c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
		if err != nil {
			return fmt.Errorf("creating the free dispatcher's client of %s: %w", w, err)
		}
		f.remote[w] = c
		err = localcluster.InformAs(ctx, w, cfg, map[client.Object]cache.ByObject{&trainer.TrainJob{}: {}}, func(obj client.Object, d localcluster.Delivery) {
			name := client.ObjectKeyFromObject(obj)
			f.seen(floorKey{worker: w, name: name}, obj, d.Gone())
			f.queue.Add(floorKey{name: name})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// freeVerdict is the state the free dispatcher gives wl's check: Ready
// once it has copied a TrainJob's Workload, Rejected for any other owner,
// whose copy it cannot build, so that such a job ends rather than hangs.
func freeVerdict(wl *kueue.Workload) (kueue.CheckState, string) {
	owner := metav1.GetControllerOf(wl)
	if owner == nil || owner.Kind != trainer.TrainJobKind || owner.APIVersion != trainer.GroupVersion.String() {
		what := "has no controlling owner"
		if owner != nil {
			what = fmt.Sprintf("belongs to %s %s %s", owner.APIVersion, owner.Kind, owner.Name)
		}
		return kueue.CheckStateRejected, fmt.Sprintf("The bench's free dispatcher copies TrainJobs only, and this Workload %s: "+
			"run such jobs through Courier (--systems courier).", what)
	}
	return kueue.CheckStateReady, "The bench's free dispatcher dispatched the job."
}

// dispatch creates the copies of wl, a TrainJob's Workload, and of its
// TrainJob on the worker the job's name picks. A copy there already is
// left as it is: a retry after a refused check write finds it.
func (f *floor) dispatch(ctx context.Context, wl *kueue.Workload) error {
	owner := metav1.GetControllerOf(wl)
	jobKey := floorKey{name: types.NamespacedName{Namespace: wl.Namespace, Name: owner.Name}}
	job, _ := f.get(jobKey).(*trainer.TrainJob)
	if job == nil {
		return fmt.Errorf("dispatching Workload %s/%s: TrainJob %s not seen yet", wl.Namespace, wl.Name, owner.Name)
	}
	wlCopy, jobCopy, err := freeCopies(wl, job)
	if err != nil {
		return err
	}
	c := f.remote[freeWorker(job.Name, f.workers)]
	for _, obj := range []client.Object{wlCopy, jobCopy} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the copy of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// finish marks job as its copy ended, then deletes the copy.
func (f *floor) finish(ctx context.Context, job *trainer.TrainJob) error {
	worker := freeWorker(job.Name, f.workers)
	remote, _ := f.get(floorKey{worker: worker, name: client.ObjectKeyFromObject(job)}).(*trainer.TrainJob)
	next, drop := freeFinish(job, remote)
	if next != nil {
		if err := f.client.Status().Patch(ctx, next, client.MergeFrom(job)); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patching %s/%s: %w", job.Namespace, job.Name, err)
		}
	}
	if drop {
		err := f.remote[worker].Delete(ctx, remote, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the copy of %s/%s on %s: %w", job.Namespace, job.Name, worker, err)
		}
	}
	return nil
}

// freeWorker is the worker a job runs on: its name's hash picks one, so
// that a retry picks the same and the jobs spread evenly.
func freeWorker(name string, workers []string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return workers[h.Sum32()%uint32(len(workers))]
}

// freeCopies are what Courier would send a worker for wl and its job:
// the Workload copy, and the job's copy, which the worker's Kueue admits
// through that Workload.
func freeCopies(wl *kueue.Workload, job *trainer.TrainJob) (*kueue.Workload, *unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		return nil, nil, fmt.Errorf("converting TrainJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.TrainJobKind))
	jobCopy, err := adapter.NewTrainJob().RemoteCopy(u, adapter.Destination{Workload: wl.Name, Origin: freeOrigin})
	if err != nil {
		return nil, nil, err
	}
	return workload.CopyFor(wl, freeOrigin, false), jobCopy, nil
}

// freeFinish is what the free dispatcher does for a manager TrainJob and its
// copy: the job with the copy's final condition, once Kueue resumed the
// job and the copy ended; and whether to delete the copy, once the job
// has its final status.
func freeFinish(job, remote *trainer.TrainJob) (*trainer.TrainJob, bool) {
	if remote == nil || remote.DeletionTimestamp != nil || job.DeletionTimestamp != nil {
		return nil, false
	}
	if isFinal(job) {
		return nil, true
	}
	if job.Spec.Suspend == nil || *job.Spec.Suspend || !isFinal(remote) {
		return nil, false
	}
	next := job.DeepCopy()
	for _, t := range []string{trainer.TrainJobComplete, trainer.TrainJobFailed} {
		if c := meta.FindStatusCondition(remote.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
				Reason: c.Reason, Message: "The bench's free dispatcher mirrored its copy's end."})
		}
	}
	return next, false
}
