package benchstack

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/tools/localcluster"
)

// The floor is no dispatcher at all: the harness itself turns the check
// Ready once the manager's Kueue reserves quota, and marks the TrainJob
// Complete once Kueue admits and resumes it, two writes per job; nothing
// reaches a worker. What the manager side costs then is what the manager's
// Kueue, API server and etcd cost for a job whatever dispatches it: the
// floor no dispatcher's manager side can go below.
const (
	floorCheck      = "bench-floor"
	floorController = "courier.dev/bench-floor"
	// floorProgram is the user agent of the floor's writes, so that the
	// audit log tells them from the harness's own.
	floorProgram = "bench-floor"
	floorWorkers = 2
	// freeWorkers is Courier's default dispatchConcurrency: the free
	// dispatcher's three round trips per job must not pace the jobs.
	freeWorkers = 16
)

// configureFloor creates the floor's AdmissionCheck and marks it Active,
// as its controller would: the ClusterQueue is inactive while a check it
// names is not.
func configureFloor(ctx context.Context, env *localcluster.Env) error {
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return err
	}
	ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: floorCheck},
		Spec: kueue.AdmissionCheckSpec{ControllerName: floorController}}
	if err := mgr.Create(ctx, ac); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating AdmissionCheck %s: %w", floorCheck, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := mgr.Get(ctx, client.ObjectKey{Name: floorCheck}, ac); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive) {
			return true, nil
		}
		before := ac.DeepCopy()
		meta.SetStatusCondition(&ac.Status.Conditions, metav1.Condition{Type: kueue.AdmissionCheckActive, Status: metav1.ConditionTrue,
			Reason: "Active", Message: "The bench's floor answers this check.", ObservedGeneration: ac.Generation})
		if err := mgr.Status().Patch(ctx, ac, client.MergeFrom(before)); err != nil && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("marking AdmissionCheck %s Active: %w", floorCheck, err)
		}
		return false, nil
	})
}

// floorKey names a manager Workload or TrainJob, or, with worker set, a
// TrainJob's copy on that worker (the free dispatcher's).
type floorKey struct {
	workload bool
	worker   string
	name     types.NamespacedName
}

// floor is the floor's controller, run through the floor's and the free
// dispatcher's phases: the informers' latest object of each key, and a
// queue of the keys to act on. remote holds a client of each worker for
// the free dispatcher, and is empty for the floor.
type floor struct {
	client  client.Client
	remote  map[string]client.Client
	workers []string
	queue   workqueue.TypedRateLimitingInterface[floorKey]
	mu      sync.Mutex
	latest  map[floorKey]client.Object
}

// startFloor runs the floor's controller until ctx ends; with free, the
// free dispatcher's, which also runs each job on a worker (compare_free.go).
func startFloor(ctx context.Context, env *localcluster.Env, free bool) error {
	cfg, err := env.RESTConfig(env.Manager)
	if err != nil {
		return err
	}
	cfg.UserAgent = floorProgram
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
	if err != nil {
		return fmt.Errorf("creating the floor's client: %w", err)
	}
	f := &floor{client: c, latest: map[floorKey]client.Object{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[floorKey]())}
	if free {
		if err := f.informWorkers(ctx, env); err != nil {
			f.queue.ShutDown()
			return err
		}
	}
	err = env.Inform(ctx, env.Manager, map[client.Object]cache.ByObject{&kueue.Workload{}: {}, &trainer.TrainJob{}: {}},
		func(obj client.Object, d localcluster.Delivery) {
			_, isWorkload := obj.(*kueue.Workload)
			key := floorKey{workload: isWorkload, name: client.ObjectKeyFromObject(obj)}
			f.seen(key, obj, d.Gone())
			f.queue.Add(key)
		})
	if err != nil {
		f.queue.ShutDown()
		return err
	}
	workers := floorWorkers
	if free {
		workers = freeWorkers
	}
	for range workers {
		go f.work(ctx)
	}
	go func() {
		<-ctx.Done()
		f.queue.ShutDown()
	}()
	return nil
}

// get is the latest object of key, nil when none.
func (f *floor) get(key floorKey) client.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest[key]
}

// seen records the latest object of key, or its deletion.
func (f *floor) seen(key floorKey, obj client.Object, gone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gone {
		delete(f.latest, key)
	} else {
		f.latest[key] = obj
	}
}

func (f *floor) work(ctx context.Context) {
	for {
		key, shutdown := f.queue.Get()
		if shutdown {
			return
		}
		if err := f.act(ctx, key); err != nil && ctx.Err() == nil {
			f.queue.AddRateLimited(key)
		} else {
			f.queue.Forget(key)
		}
		f.queue.Done(key)
	}
}

// act writes what the latest object of key needs, if anything. A write
// refused for a conflict or on an object gone is left: the newer version's
// event queues the key again.
func (f *floor) act(ctx context.Context, key floorKey) error {
	obj := f.get(key)
	var patched client.Object
	var patch client.Patch
	switch o := obj.(type) {
	case *kueue.Workload:
		state, message := kueue.CheckStateReady, "The bench's floor dispatches nowhere."
		if f.free() {
			state, message = freeVerdict(o)
		}
		next := floorAnswer(o, state, message)
		if next == nil {
			return nil
		}
		if state == kueue.CheckStateReady && f.free() {
			if err := f.dispatch(ctx, o); err != nil {
				return err
			}
		}
		patched, patch = next, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{})
	case *trainer.TrainJob:
		if f.free() {
			return f.finish(ctx, o)
		}
		if next := floorComplete(o); next != nil {
			patched, patch = next, client.MergeFrom(o)
		}
	}
	if patched == nil {
		return nil
	}
	if err := f.client.Status().Patch(ctx, patched, patch); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching %s: %w", key.name, err)
	}
	return nil
}

// floorAnswer is wl with the floor's check in state, saying message, when
// Kueue has reserved quota for it and the check is Pending; nil otherwise.
func floorAnswer(wl *kueue.Workload, state kueue.CheckState, message string) *kueue.Workload {
	i := slices.IndexFunc(wl.Status.AdmissionChecks, func(c kueue.AdmissionCheckState) bool { return c.Name == floorCheck })
	if i < 0 || wl.Status.AdmissionChecks[i].State != kueue.CheckStatePending ||
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) ||
		meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return nil
	}
	next := wl.DeepCopy()
	check := &next.Status.AdmissionChecks[i]
	check.State, check.Message, check.LastTransitionTime = state, message, metav1.Now()
	return next
}

// floorComplete is job marked Complete, when Kueue has resumed it and it
// has not ended; nil otherwise.
func floorComplete(job *trainer.TrainJob) *trainer.TrainJob {
	if job.Spec.Suspend == nil || *job.Spec.Suspend || job.DeletionTimestamp != nil || isFinal(job) {
		return nil
	}
	next := job.DeepCopy()
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue,
		Reason: "FloorCompleted", Message: "The bench's floor completed the job, which ran nowhere."})
	return next
}
