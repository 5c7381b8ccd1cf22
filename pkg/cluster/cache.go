package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
)

// Timings of every connection, declared once.
const (
	DefaultHealthPeriod   = 5 * time.Second
	DefaultHealthTimeout  = 5 * time.Second
	DefaultRequestTimeout = 10 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	DefaultKindsPeriod    = 30 * time.Second

	// Two failed health checks in a row make a worker unreachable, so that
	// one lost packet does not tear the informers down.
	healthFailureThreshold = 2
)

// Options configure every connection of a Cache.
type Options struct {
	// Origin selects the remote objects the informers see.
	Origin string
	// QPS and Burst limit each worker's client.
	QPS   float32
	Burst int
	// Kinds are the kinds to watch on every worker: Kueue's Workload and the
	// job kinds. A kind a worker does not serve is reported, not fatal.
	// Kinds the scheme knows are read typed, except those in
	// UnstructuredKinds.
	Kinds []schema.GroupVersionKind
	// UnstructuredKinds are read as unstructured objects even if the scheme
	// knows them: job kinds, which adapters handle generically.
	UnstructuredKinds []schema.GroupVersionKind
	// OptionalKinds are watched where served, read as unstructured, and not
	// reported when missing: most workers lack them, and only jobs that
	// need them care (PodGroups of native gang scheduling).
	OptionalKinds []schema.GroupVersionKind
	// Scheme knows the typed kinds; the others are read as unstructured.
	Scheme *runtime.Scheme
	// OnRemoteChange, if set, is called from a worker's informers for
	// every add, update and delete of an object they see, with the object
	// as it was before an update (nil for an add or a delete), and whether
	// it was deleted. Calls start once the worker counts as connected (Get
	// returns it), with an add for every object it holds then; after a
	// reconnection, again so. It may block; only that informer waits.
	OnRemoteChange func(cluster string, old, obj client.Object, deleted bool)
	// OnRoom, if set, is called when a worker's quota may have room it did
	// not have: a copy of Courier's stopped holding quota, a ClusterQueue's
	// reserved quota fell, or a quota object was added or respecified. It
	// is called at most once a second per worker, the last change of a
	// burst included, and may block; only that worker's calls wait.
	OnRoom func(cluster string)
	// Indexes are field indexes added to every informer of every worker, so
	// that readers can find objects by what they belong to without listing.
	Indexes map[string]client.IndexerFunc
	// Heartbeat, if set, is renewed on every worker while it is connected.
	Heartbeat *Heartbeat

	// Zero durations take the defaults above.
	HealthPeriod   time.Duration
	HealthTimeout  time.Duration
	RequestTimeout time.Duration
	ConnectTimeout time.Duration
	KindsPeriod    time.Duration

	networkBackoff wait.Backoff
	configBackoff  wait.Backoff
}

func (o Options) withDefaults() *Options {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&o.HealthPeriod, DefaultHealthPeriod)
	set(&o.HealthTimeout, DefaultHealthTimeout)
	set(&o.RequestTimeout, DefaultRequestTimeout)
	set(&o.ConnectTimeout, DefaultConnectTimeout)
	set(&o.KindsPeriod, DefaultKindsPeriod)
	// Network loss passes by itself: retry soon. Refused credentials need a
	// person (or an RBAC change on the worker, which Courier cannot watch):
	// retry slowly. A Secret change restarts the connection at once.
	o.networkBackoff = newBackoff(time.Second, 30*time.Second)
	// Starting at a second: an API server that restarts answers 403 for a
	// moment while its RBAC caches fill.
	o.configBackoff = newBackoff(time.Second, 5*time.Minute)
	return &o
}

// Connections are the workers' connections as the dispatcher reads and
// writes through them; *Cache is the real one.
type Connections interface {
	// Get returns the worker's Remote, or an error if it is not connected.
	Get(name string) (*Remote, error)
	// Names lists the workers with a connection, working or not.
	Names() []string
	// State returns what the connection to the worker knows of it,
	// connected or not, and whether there is one.
	State(name string) (State, bool)
}

// Cache holds one connection per WorkerCluster. Its lock guards only the
// map: no I/O happens under it, and each connection does its own I/O in its
// own goroutine.
type Cache struct {
	opts   *Options
	events chan event.GenericEvent
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	conns map[string]*connection
}

// NewCache returns a Cache. Add it to the manager so that its connections
// stop with it.
func NewCache(opts Options) *Cache {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{
		opts:   opts.withDefaults(),
		events: make(chan event.GenericEvent, 1024),
		ctx:    ctx,
		cancel: cancel,
		conns:  map[string]*connection{},
	}
}

// Start blocks until ctx ends, then stops every connection and waits for
// them.
func (c *Cache) Start(ctx context.Context) error {
	<-ctx.Done()
	c.cancel()
	c.mu.Lock()
	conns := c.conns
	c.conns = map[string]*connection{}
	c.mu.Unlock()
	for _, conn := range conns {
		<-conn.done
	}
	return nil
}

// Events delivers a WorkerCluster (name only) whenever its connection state
// changes; controllers watch it with source.Channel.
func (c *Cache) Events() <-chan event.GenericEvent { return c.events }

// Connect makes sure a connection for name uses this kubeconfig. The same
// kubeconfig keeps the current connection; a different one (a rotated
// Secret) replaces it. It never blocks on the network.
func (c *Cache) Connect(name string, kubeconfig []byte, config *rest.Config) {
	key := sha256.Sum256(kubeconfig)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.conns[name]; ok {
		if old.key == key {
			return
		}
		old.cancel()
	}
	ctx, cancel := context.WithCancel(c.ctx)
	conn := &connection{
		name:   name,
		key:    key,
		config: config,
		opts:   c.opts,
		cancel: cancel,
		done:   make(chan struct{}),
		notify: func() { c.notify(name) },
	}
	c.conns[name] = conn
	go conn.run(ctx)
}

// Disconnect stops the connection for name, if any. The worker stays in the
// metrics, as not connected: a configuration error is worth a graph too.
func (c *Cache) Disconnect(name string) {
	c.mu.Lock()
	conn, ok := c.conns[name]
	delete(c.conns, name)
	c.mu.Unlock()
	if ok {
		conn.cancel()
	}
	metrics.WorkerConnected.WithLabelValues(name).Set(0)
}

// Remove disconnects a worker whose WorkerCluster is gone and drops its
// metric series.
func (c *Cache) Remove(name string) {
	c.Disconnect(name)
	metrics.ForgetWorker(name)
}

// State returns the state of the connection for name, with the worker's
// capacity while connected.
func (c *Cache) State(name string) (State, bool) {
	conn := c.get(name)
	if conn == nil {
		return State{}, false
	}
	s, r := conn.snapshot()
	if s.Connected && r != nil {
		resources, summary := r.CapacitySummary()
		s.Capacity = &CapacityReport{Resources: resources, Summary: summary}
	}
	return s, true
}

// Get returns the worker's Remote, or an error wrapping ErrNotConnected that
// says why there is none.
func (c *Cache) Get(name string) (*Remote, error) {
	conn := c.get(name)
	if conn == nil {
		return nil, fmt.Errorf("worker cluster %q: %w", name, ErrNotConnected)
	}
	s, r := conn.snapshot()
	if r == nil || !s.Connected {
		return nil, fmt.Errorf("worker cluster %q: %w", name, notConnectedError(s))
	}
	return r, nil
}

// Names lists the clusters with a connection, working or not.
func (c *Cache) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.conns))
	for name := range c.conns {
		names = append(names, name)
	}
	return names
}

func (c *Cache) get(name string) *connection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[name]
}

// notify never blocks a connection: if the channel is full, the controllers
// are behind and will see the latest state when they catch up.
func (c *Cache) notify(name string) {
	wc := &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	select {
	case c.events <- event.GenericEvent{Object: wc}:
	default:
	}
}
