package benchscale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

// workerQueue is the ClusterQueue a worker's Kueue admits copies into.
const workerQueue = "worker-cq"

// admitters play the workers' Kueue: each admits every copy of a Workload
// that Courier creates on its worker, as kueuesim.AdmitOn does, and all
// together count the copies that exist.
type admitters struct {
	timeline *timeline
	// copies is how many Courier copies of Workloads exist on all workers.
	copies atomic.Int64

	mu      sync.Mutex
	lastErr error
}

// startAdmitters watches Courier's Workload copies on every worker and
// admits them with concurrency updates in flight per worker, until ctx
// ends.
func startAdmitters(ctx context.Context, workers []*framework.Cluster, tl *timeline, concurrency int) (*admitters, error) {
	a := &admitters{timeline: tl}
	for _, w := range workers {
		if err := a.start(ctx, w, concurrency); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *admitters) start(ctx context.Context, w *framework.Cluster, concurrency int) error {
	hasOrigin, err := labels.NewRequirement(courier.OriginLabel, selection.Exists, nil)
	if err != nil {
		return fmt.Errorf("selecting Courier's copies: %w", err)
	}
	informers, err := cache.New(w.Config, cache.Options{
		Scheme:               framework.Scheme,
		DefaultLabelSelector: labels.NewSelector().Add(*hasOrigin),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating the Workload informer of %s: %w", w.Name, err)
	}
	inf, err := informers.GetInformer(ctx, &kueue.Workload{})
	if err != nil {
		return fmt.Errorf("getting the Workload informer of %s: %w", w.Name, err)
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	enqueue := func(obj any) {
		if wl, ok := obj.(*kueue.Workload); ok && wl.DeletionTimestamp == nil && !admitted(wl) {
			queue.Add(client.ObjectKeyFromObject(wl))
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if wl, ok := obj.(*kueue.Workload); ok {
				a.copies.Add(1)
				a.timeline.copySeen(wl.Name, time.Now())
			}
			enqueue(obj)
		},
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(any) { a.copies.Add(-1) },
	}); err != nil {
		return fmt.Errorf("watching Workloads on %s: %w", w.Name, err)
	}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for range concurrency {
		go a.work(ctx, w, informers, queue)
	}
	return startInformers(ctx, informers, w.Name)
}

func (a *admitters) work(ctx context.Context, w *framework.Cluster, informers cache.Cache, queue workqueue.TypedRateLimitingInterface[types.NamespacedName]) {
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return
		}
		if err := a.admit(ctx, w, informers, key); err != nil && ctx.Err() == nil {
			a.mu.Lock()
			a.lastErr = fmt.Errorf("admitting Workload %s on %s: %w", key, w.Name, err)
			a.mu.Unlock()
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// admit reserves quota and admits the copy, first from the informer's
// object, then, after a conflict, from a fresh read. A copy already gone
// lost to another worker's admission.
func (a *admitters) admit(ctx context.Context, w *framework.Cluster, informers cache.Cache, key types.NamespacedName) error {
	wl := &kueue.Workload{}
	read := func() error { return informers.Get(ctx, key, wl) }
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := read(); err != nil {
			return err
		}
		read = func() error { return w.Client.Get(ctx, key, wl) }
		if wl.DeletionTimestamp != nil || admitted(wl) {
			return nil
		}
		done := kueuetesting.MakeWorkload(wl.Name, wl.Namespace).Count(wl.Spec.PodSets[0].Count).
			ReserveQuota(workerQueue).Admit(time.Now()).Obj()
		wl.Status.Admission = done.Status.Admission
		for _, c := range done.Status.Conditions {
			meta.SetStatusCondition(&wl.Status.Conditions, c)
		}
		if err := w.Client.Status().Update(ctx, wl); err != nil {
			return err
		}
		a.timeline.admitted(wl.Name, time.Now())
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func admitted(wl *kueue.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
}

// err is the last error an admission met, for a phase that times out.
func (a *admitters) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr
}
