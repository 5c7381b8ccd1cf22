package fence

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

const (
	// DefaultPollInterval is how often the fence lists the heartbeats.
	DefaultPollInterval = time.Second
	// LeaseRenewInterval is how often the fence renews its own Lease when
	// nothing it publishes changed.
	LeaseRenewInterval = 10 * time.Second
	// leaseDuration is the fence Lease's leaseDurationSeconds: three
	// renewals missed.
	leaseDuration = 3 * LeaseRenewInterval
	// requestTimeout bounds each request: a list that hangs would delay the
	// next, and the fence stamps a renewal by the list that first shows it.
	requestTimeout = 5 * time.Second
	// patchConcurrency is how many Workloads are deactivated at once, so
	// that a worker with thousands of copies is fenced within seconds.
	patchConcurrency = 16
)

// Options configure a Fence.
type Options struct {
	// Namespace holds the heartbeat Leases and the fence's own Lease.
	Namespace string
	// PollInterval is how often the heartbeats are listed; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Identity is the fence Lease's holderIdentity.
	Identity string
	// WorkerCluster names this worker on the manager; required with a
	// manager.
	WorkerCluster string
}

// Fence watches the heartbeats of the Courier managers using this worker
// and stops their copies when one stops (see the package comment). It is a
// controller-runtime Runnable that needs leader election.
type Fence struct {
	opts    Options
	worker  client.Client
	events  kubernetes.Interface
	manager client.Reader
}

// newScheme holds what the fence reads and writes: Leases, Events, Kueue
// Workloads and Courier's WorkerCluster.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(courier.AddToScheme(s))
	return s
}

// New returns a fence on the worker that worker reaches; manager, when not
// nil, reaches the manager cluster, where the fence gets only
// opts.WorkerCluster.
func New(worker, manager *rest.Config, opts Options) (*Fence, error) {
	if opts.Namespace == "" {
		return nil, errors.New("creating the fence: no namespace")
	}
	if opts.Identity == "" {
		return nil, errors.New("creating the fence: no identity")
	}
	if (manager == nil) != (opts.WorkerCluster == "") {
		return nil, errors.New("creating the fence: a manager and a WorkerCluster name go together")
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	scheme := newScheme()
	workerConfig := clientConfig(worker)
	f := &Fence{opts: opts}
	var err error
	if f.worker, err = client.New(workerConfig, client.Options{Scheme: scheme}); err != nil {
		return nil, fmt.Errorf("creating the worker client: %w", err)
	}
	if f.events, err = kubernetes.NewForConfig(workerConfig); err != nil {
		return nil, fmt.Errorf("creating the worker events client: %w", err)
	}
	if manager != nil {
		if f.manager, err = client.New(clientConfig(manager), client.Options{Scheme: scheme}); err != nil {
			return nil, fmt.Errorf("creating the manager client: %w", err)
		}
	}
	return f, nil
}

// clientConfig bounds each request, and raises client-go's default rate
// limit, which would let a fence deactivate only 5 Workloads a second.
func clientConfig(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.Timeout = requestTimeout
	if c.QPS == 0 {
		c.QPS, c.Burst = 200, 400
	}
	return c
}

// loop is the state one run of the fence carries from pass to pass. The
// heartbeat lists run on their own, never behind the writes: a list delayed
// by a long fencing would stamp another origin's renewal late.
type loop struct {
	log        logr.Logger
	heartbeats *heartbeats
	manager    *managerReader
	recorder   events.EventRecorder
	verdicts   map[string]Verdict
	// wake tells the actor that the fenced origins changed.
	wake chan struct{}

	mu     sync.Mutex
	fenced map[string]fencing
	state  ManagerState
}

// fencing is why an origin is fenced, for its Workloads' events.
type fencing struct {
	reason Reason
	// seen is when the fence first saw the heartbeat's current version.
	seen time.Time
}

// Start runs the fence until ctx ends. The fence's start, from which a
// heartbeat present at the first list counts, is now.
func (f *Fence) Start(ctx context.Context) error {
	start := time.Now()
	log := ctrl.LoggerFrom(ctx).WithName("fence")
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: f.events.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("starting the event broadcaster: %w", err)
	}
	defer broadcaster.Shutdown()
	l := &loop{
		log:        log,
		heartbeats: newHeartbeats(start),
		manager:    newManagerReader(f.manager, f.opts.WorkerCluster, f.opts.PollInterval, start),
		recorder:   broadcaster.NewRecorder(f.worker.Scheme(), "courier-fence"),
		verdicts:   map[string]Verdict{},
		wake:       make(chan struct{}, 1),
		fenced:     map[string]fencing{},
	}
	log.Info("Starting the fence", "namespace", f.opts.Namespace, "pollInterval", f.opts.PollInterval,
		"workerCluster", f.opts.WorkerCluster, "identity", f.opts.Identity)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { l.manager.run(ctx) })
	wg.Go(func() { f.act(ctx, l) })
	ticker := time.NewTicker(f.opts.PollInterval)
	defer ticker.Stop()
	for {
		f.poll(ctx, l)
		select {
		case <-ctx.Done():
			fencedOrigins.Set(0)
			return nil
		case <-ticker.C:
		}
	}
}

// poll lists the heartbeats and decides per origin.
func (f *Fence) poll(ctx context.Context, l *loop) {
	sent := time.Now()
	leases := &coordinationv1.LeaseList{}
	err := f.worker.List(ctx, leases, client.InNamespace(f.opts.Namespace))
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		l.log.Error(err, "Listing heartbeats; deciding on the last ones seen")
	} else {
		c := l.heartbeats.observe(sent, leases.Items)
		for _, origin := range c.added {
			l.log.V(2).Info("Watching a new heartbeat", "origin", origin)
		}
		for _, origin := range c.gone {
			l.log.Info("Forgetting origin: its heartbeat Lease is gone", "origin", origin)
			delete(l.verdicts, origin)
		}
	}
	now := time.Now()
	view, state, managerErr := l.manager.snapshot(now)
	fenced := map[string]fencing{}
	for origin, hb := range l.heartbeats.byOrigin {
		d := Decide(now, hb.Heartbeat, view)
		if prev := l.verdicts[origin]; d.Verdict != prev && (prev != "" || d.Verdict != Fresh) {
			l.log.Info(transition(d.Verdict), "origin", origin, "reason", d.Reason,
				"unchangedFor", now.Sub(hb.Seen).Round(time.Millisecond), "timeout", hb.Duration, "managerError", managerErr)
		}
		l.verdicts[origin] = d.Verdict
		if d.Verdict == Fenced {
			fenced[origin] = fencing{reason: d.Reason, seen: hb.Seen}
		}
	}
	fencedOrigins.Set(float64(len(fenced)))
	l.mu.Lock()
	changed := !maps.Equal(l.fenced, fenced) || l.state != state
	l.fenced, l.state = fenced, state
	l.mu.Unlock()
	if changed {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// act stops the copies of the fenced origins each poll interval, or at
// once when they change, and publishes the fence's state on its Lease.
func (f *Fence) act(ctx context.Context, l *loop) {
	ticker := time.NewTicker(f.opts.PollInterval)
	defer ticker.Stop()
	var published string
	var renewed time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-l.wake:
		}
		l.mu.Lock()
		fenced, state := maps.Clone(l.fenced), l.state
		l.mu.Unlock()
		origins := slices.Sorted(maps.Keys(fenced))
		for _, origin := range origins {
			now := time.Now()
			err := f.fenceOrigin(ctx, l.recorder, origin, fenced[origin].reason, now.Sub(fenced[origin].seen), now)
			if err != nil && ctx.Err() == nil {
				l.log.Error(err, "Fencing origin; retrying at the next poll", "origin", origin)
			}
		}
		now := time.Now()
		current := strings.Join(origins, ",") + "/" + string(state)
		if current == published && now.Sub(renewed) < LeaseRenewInterval {
			continue
		}
		if err := f.renewLease(ctx, origins, state); err != nil {
			if ctx.Err() == nil {
				l.log.Error(err, "Renewing the fence Lease")
			}
			continue
		}
		published, renewed = current, now
	}
}

// transition is the log message of an origin's new verdict.
func transition(v Verdict) string {
	switch v {
	case Fenced:
		return "Fencing origin: deactivating its Workloads"
	case Held:
		return "Holding origin: its heartbeat is stale, but the manager has not revoked this worker"
	default:
		return "Releasing origin: its heartbeat is fresh"
	}
}
