package dispatch

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/act"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/observe"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/placement"
)

// Options configure the dispatcher.
type Options struct {
	Origin            string
	WorkerLostTimeout time.Duration
	// LostWorker are the lost-worker settings. Left empty, its Timeout is
	// WorkerLostTimeout, its Policy Timeout, and its Started the time New
	// was called.
	LostWorker lostworker.Settings
	GCInterval time.Duration
	// Concurrency is how many Workloads are reconciled at once.
	Concurrency int
	// StatusMirrorDelay is how long the pass a job copy's status change
	// brings may wait, so that a burst of changes is mirrored in one write
	// (see statusWait), and the least time between two mirrors of a
	// running job's status (observe.Observer.mirrorIn).
	StatusMirrorDelay time.Duration
	// KueueFinishGrace is how long a Workload whose job's end is mirrored
	// is left for the manager's Kueue to finish (plan.Observed).
	KueueFinishGrace time.Duration
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
	// into the controller as Workload keys.
	remote chan event.TypedGenericEvent[remoteChange]
	// running ends when the manager stops. What runs outside a reconcile,
	// in an informer's handler or a metrics scrape (a send on remote, a
	// cache read that waits for an informer to sync), waits on it, so that
	// none of them holds the manager's shutdown for ever.
	running context.Context
	stop    context.CancelFunc
}

// New returns a Reconciler over the manager client c and the workers'
// connections; hand OnRemoteChange and OnRoom to the cluster cache.
func New(c client.Client, remotes cluster.Connections, recorder events.EventRecorder, opts Options) *Reconciler {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.LostWorker.Timeout == 0 {
		opts.LostWorker.Timeout = opts.WorkerLostTimeout
	}
	if opts.LostWorker.Policy == "" {
		opts.LostWorker.Policy = courier.LostWorkerTimeout
	}
	if opts.LostWorker.Started.IsZero() {
		opts.LostWorker.Started = time.Now()
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
	}
	r.running, r.stop = context.WithCancel(context.Background())
	for _, a := range opts.Adapters {
		r.adapters[a.GVK().GroupKind()] = a
	}
	// The steps read the clock through r.now, which tests set.
	now := func() time.Time { return r.now() }
	r.observer = &observe.Observer{Client: c, Remotes: remotes, Expectations: r.exp, Adapters: r.adapters, Policies: r.policies,
		Origin: opts.Origin, WorkerLostTimeout: opts.WorkerLostTimeout, StatusMirrorDelay: opts.StatusMirrorDelay, KueueFinishGrace: opts.KueueFinishGrace, Lost: opts.LostWorker, Now: now}
	r.actor = &act.Actor{Client: c, Remotes: remotes, Expectations: r.exp, Recorder: recorder, Adapters: r.adapters,
		AdapterList: opts.Adapters, Origin: opts.Origin, StatusInObject: opts.StatusInObject, Now: now}
	return r
}
