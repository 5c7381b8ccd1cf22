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
	"k8s.io/client-go/tools/events"
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
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/admissioncheck"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/collector"
	"github.com/courierdev/courier/pkg/dispatch/act"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/observe"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/dispatchpolicy"
	"github.com/courierdev/courier/pkg/metrics"
	"github.com/courierdev/courier/pkg/placement"
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

// Options configure the dispatcher.
type Options struct {
	Origin            string
	WorkerLostTimeout time.Duration
	GCInterval        time.Duration
	// Concurrency is how many Workloads are reconciled at once.
	Concurrency int
	// StatusMirrorDelay is how long the pass a job copy's status change
	// brings may wait, so that a burst of changes is mirrored in one write
	// (see statusWait).
	StatusMirrorDelay time.Duration
	// Adapters handle the job kinds Courier dispatches.
	Adapters []adapter.Adapter
	// UnservedKinds are configured kinds the manager does not serve; the
	// AdmissionChecks report them.
	UnservedKinds []string
	// StatusInObject are served kinds without a status subresource, whose
	// mirrored status is patched into the object itself.
	StatusInObject []schema.GroupVersionKind
}

// Reconciler dispatches manager Workloads: it wires the observe, plan and
// act steps of a pass (see Reconcile) to the manager's and the workers'
// events.
type Reconciler struct {
	client   client.Client
	remotes  cluster.Connections
	opts     Options
	adapters map[schema.GroupKind]adapter.Adapter
	now      func() time.Time
	// exp is what Courier did that its caches may not show yet; observer
	// reads it, actor writes it.
	exp      *expect.Expectations
	observer *observe.Observer
	actor    *act.Actor
	// policies holds the DispatchPolicies' compiled CEL.
	policies *placement.Cache
	// remote carries workers' object changes and garbage-collection sweeps
	// into the controller as Workload keys; stopped closes when the manager
	// stops, so that no sender waits on it for ever.
	remote  chan event.TypedGenericEvent[remoteChange]
	stopped chan struct{}
}

// New returns a Reconciler over the manager client c and the workers'
// connections; hand OnRemoteChange and OnRoom to the cluster cache.
func New(c client.Client, remotes cluster.Connections, recorder events.EventRecorder, opts Options) *Reconciler {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	r := &Reconciler{
		client:   c,
		remotes:  remotes,
		opts:     opts,
		adapters: map[schema.GroupKind]adapter.Adapter{},
		now:      time.Now,
		exp:      expect.New(),
		policies: &placement.Cache{},
		remote:   make(chan event.TypedGenericEvent[remoteChange], 4096),
		stopped:  make(chan struct{}),
	}
	for _, a := range opts.Adapters {
		r.adapters[a.GVK().GroupKind()] = a
	}
	// The steps read the clock through r.now, which tests set.
	now := func() time.Time { return r.now() }
	r.observer = &observe.Observer{Client: c, Remotes: remotes, Expectations: r.exp, Adapters: r.adapters, Policies: r.policies,
		Origin: opts.Origin, WorkerLostTimeout: opts.WorkerLostTimeout, Now: now}
	r.actor = &act.Actor{Client: c, Remotes: remotes, Expectations: r.exp, Recorder: recorder, Adapters: r.adapters,
		AdapterList: opts.Adapters, Origin: opts.Origin, StatusInObject: opts.StatusInObject, Now: now}
	return r
}

// OnRemoteChange maps a worker's object to the manager Workload it belongs
// to and queues that Workload, unless the change is one no plan reads (see
// copyChangeMatters and finishedOnManager); old is the object before an
// update, nil otherwise. It blocks while the queue is full, since dropping
// the event could lose a status change, but not past shutdown.
func (r *Reconciler) OnRemoteChange(_ string, old, obj client.Object, deleted bool) {
	name := workload.Of(obj)
	if name == "" || (old != nil && !copyChangeMatters(old, obj)) || (deleted && r.finishedOnManager(obj.GetNamespace(), name)) {
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
	case <-r.stopped:
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
		close(r.stopped)
		return nil
	})); err != nil {
		return fmt.Errorf("adding the shutdown guard: %w", err)
	}
	gc := &collector.Collector{Client: r.client, Remotes: r.remotes, Kinds: r.copyKinds(), Interval: r.opts.GCInterval,
		Enqueue: func(key types.NamespacedName) { r.enqueue(remoteChange{key: key}) }}
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
