// Package dispatch is Courier's Kueue admission-check controller. For each
// manager Workload with quota reserved and a Courier check, it copies the
// Workload to the policy's workers, lets the first worker whose Kueue admits
// the copy win, records that choice on the manager Workload, creates the
// job there through the job's adapter, marks the check Ready, and mirrors
// status back until the Workload finishes: the final job status first, the
// Workload's end next, the removal of the worker's copies last.
//
// Each pass is a pipeline of three packages: observe reads the Workload and
// its copies on every worker from caches, plan decides with the pure
// function plan.Decide, and act carries the plan out in ordered steps:
// remote writes, then one status write, then events. What Courier did that
// its caches do not show yet is kept in expect, which observe reads and act
// writes. This package wires them to the events of the manager and the
// workers.
package dispatch

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/admissioncheck"
	"github.com/courierdev/courier/pkg/collector"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/dispatchpolicy"
	"github.com/courierdev/courier/pkg/metrics"
)

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks/status,verbs=patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=clusterqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=courier.dev,resources=dispatchpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=patch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups;workloads,verbs=get;list;watch

// OnRemoteChange maps a worker's object to the manager Workload it belongs
// to and queues that Workload, unless the change is one no plan reads (see
// copyChangeMatters and finishedOnManager); old is the object before an
// update, nil otherwise. It blocks while the queue is full, since dropping
// the event could lose a status change, but not past shutdown.
func (r *Reconciler) OnRemoteChange(_ string, old, obj client.Object, deleted bool) {
	name := workload.Of(obj)
	if name == "" || !copyChangeMatters(old, obj, r.adapters) || (deleted && r.finishedOnManager(obj.GetNamespace(), name)) {
		return
	}
	r.enqueue(remoteChange{
		key:   types.NamespacedName{Namespace: obj.GetNamespace(), Name: name},
		after: statusWait(old, obj, r.adapters, r.opts.StatusMirrorDelay),
	})
}

func (r *Reconciler) enqueue(c remoteChange) {
	select {
	case r.remote <- event.TypedGenericEvent[remoteChange]{Object: c}:
	case <-r.running.Done():
	}
}

// SetupWithManager registers the dispatcher, its garbage collector and the
// AdmissionCheck controller.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := indexWorkloads(mgr); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// Runs on the leader only, as the dispatcher does: the other
		// replicas export no pending count.
		metrics.CountPendingWith(r.countPending)
		metrics.CountExpectationsWith(r.exp.Sizes)
		<-ctx.Done()
		metrics.CountPendingWith(nil)
		metrics.CountExpectationsWith(nil)
		r.stop()
		return nil
	})); err != nil {
		return fmt.Errorf("adding the shutdown guard: %w", err)
	}
	gc := &collector.Collector{Client: r.client, Remotes: r.remotes, Kinds: r.copyKinds(), Interval: r.opts.GCInterval,
		Enqueue: func(key types.NamespacedName) { r.enqueue(remoteChange{key: key}) },
		Leaving: func(obj client.Object) bool { return r.exp.Leaving(obj, r.now()) }}
	if err := mgr.Add(gc); err != nil {
		return fmt.Errorf("adding the garbage collector: %w", err)
	}
	b := builder.ControllerManagedBy(mgr).
		Named("dispatch").
		For(&kueue.Workload{}, builder.WithPredicates(r.courierWorkloads(), workloadChanged(r.exp, r.now))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Concurrency, RateLimiter: passRateLimiter()}).
		WatchesRawSource(source.TypedChannel(r.remote, handler.TypedFuncs[remoteChange, reconcile.Request]{
			GenericFunc: func(_ context.Context, e event.TypedGenericEvent[remoteChange], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				req := reconcile.Request{NamespacedName: e.Object.key}
				if e.Object.after > 0 {
					// A Workload already waiting keeps its earlier time.
					q.AddAfter(req, e.Object.after)
					return
				}
				q.Add(req)
			},
		})).
		Watches(&courier.WorkerCluster{}, handler.EnqueueRequestsFromMapFunc(r.workloadsForCluster), builder.WithPredicates(usabilityChanged())).
		Watches(&kueue.AdmissionCheck{}, r.checkEvents()).
		Watches(&kueue.ClusterQueue{}, r.quotaEvents()).
		Watches(&courier.DispatchPolicy{}, handler.EnqueueRequestsFromMapFunc(r.workloadsForPolicy))
	for _, a := range r.adapters {
		b = b.Watches(jobObject(a), handler.EnqueueRequestsFromMapFunc(r.workloadsForJob), builder.WithPredicates(jobChanged()))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("setting up the dispatch controller: %w", err)
	}
	if err := dispatchpolicy.Setup(mgr, r.policies); err != nil {
		return err
	}
	return admissioncheck.Setup(mgr, r.policies, r.opts.UnservedKinds)
}

// copyKinds are the kinds, besides Kueue's Workload, of what Courier
// creates on workers.
func (r *Reconciler) copyKinds() []schema.GroupVersionKind {
	kinds := slices.Clone(workload.DepKinds)
	for _, a := range r.opts.Adapters {
		kinds = append(kinds, a.GVK())
	}
	return kinds
}

// maxErrorBackoff bounds how long a Workload whose pass failed waits for the
// next one. controller-runtime's default doubles up to 1,000 s: a worker
// failing for minutes would hold the jobs that chose it for a quarter of an
// hour more after it recovered, when nothing else queues them.
const maxErrorBackoff = time.Minute

// passRateLimiter is controller-runtime's default rate limiter for the
// passes of failed Workloads, the backoff of each capped at maxErrorBackoff.
func passRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, maxErrorBackoff),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
