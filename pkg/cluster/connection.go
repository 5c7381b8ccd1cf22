package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
)

// State is what a connection knows of its worker.
type State struct {
	// Connected is true while a Remote is usable.
	Connected bool
	// Err says why the worker is not usable; nil while connected, and while
	// the first attempt is under way.
	Err *Error
	// Since is when the worker became connected, or when it first failed.
	Since time.Time
	// KubernetesVersion is the worker API server's version.
	KubernetesVersion string
	// UnavailableKinds are the wanted kinds the worker does not serve.
	UnavailableKinds []string
	// Capacity is the worker's quota, for the WorkerCluster status; nil
	// when not connected. Cache.State reads it from the Remote when asked:
	// it changes with every admission on the worker, which is no change of
	// the connection's state.
	Capacity *CapacityReport
	// Heartbeat is Courier's heartbeat on the worker, and Fence what it
	// sees of the worker's fence; both outlive a disconnection.
	Heartbeat HeartbeatState
	Fence     FenceState
}

// errKindsChanged ends a healthy Remote whose worker now serves other kinds,
// or now lets Courier read its quota objects, or no longer does.
var errKindsChanged = errors.New("served kinds changed")

// connection keeps one worker connected. Its goroutine alone connects,
// checks health and reconnects; readers only take the lock to copy state.
type connection struct {
	name   string
	key    [sha256.Size]byte
	config *rest.Config
	opts   *Options
	notify func()
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.RWMutex
	state  State
	remote *Remote
}

func (c *connection) snapshot() (State, *Remote) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state, c.remote
}

func (c *connection) run(ctx context.Context) {
	defer close(c.done)
	defer c.swap(nil)
	everConnected := false
	network, config := c.opts.networkBackoff, c.opts.configBackoff
	for ctx.Err() == nil {
		connectCtx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
		r, err := connect(connectCtx, c.name, c.config, c.opts, c.notify)
		cancel()
		if err == nil {
			if state, _ := c.snapshot(); everConnected && !state.Connected {
				metrics.WorkerReconnects.WithLabelValues(c.name).Inc()
			}
			everConnected = true
			c.connected(r)
			network, config = c.opts.networkBackoff, c.opts.configBackoff
			if err = r.forwardChanges(c.opts.OnRemoteChange); err == nil {
				err = c.watch(ctx, r)
			}
			if errors.Is(err, errKindsChanged) {
				// Keep serving from r until its replacement is connected.
				continue
			}
			c.swap(nil)
		}
		if ctx.Err() != nil {
			return
		}
		cerr := classify(err, "connecting")
		c.failed(cerr)
		delay := network.Step()
		if cerr.IsConfiguration() {
			delay = config.Step()
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// watch checks a connected worker's health until it fails twice in a row,
// or until the kinds it serves change.
func (c *connection) watch(ctx context.Context, r *Remote) error {
	health := time.NewTicker(c.opts.HealthPeriod)
	defer health.Stop()
	kinds := time.NewTicker(c.opts.KindsPeriod)
	defer kinds.Stop()
	var beats <-chan time.Time
	if c.opts.Heartbeat != nil {
		c.beat(ctx, r)
		ticker := time.NewTicker(c.opts.Heartbeat.Interval)
		defer ticker.Stop()
		beats = ticker.C
	}
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-beats:
			c.beat(ctx, r)
		case <-health.C:
			hctx, cancel := context.WithTimeout(ctx, c.opts.HealthTimeout)
			err := r.health(hctx)
			cancel()
			if err == nil {
				failures = 0
				continue
			}
			if failures++; failures >= healthFailureThreshold {
				return classify(err, "checking health")
			}
		case <-kinds.C:
			served, _, err := r.discover(ctx)
			if err != nil {
				return err
			}
			if !served.Equal(r.served) {
				return errKindsChanged
			}
			// An RBAC change on the worker shows here, not as an event.
			unknown, err := r.access(ctx, served)
			if err != nil {
				return err
			}
			if unknown != r.capacity.unknown {
				return errKindsChanged
			}
		}
	}
}

func (c *connection) connected(r *Remote) {
	c.update(func(s *State) {
		if !s.Connected {
			s.Since = time.Now()
		}
		s.Connected, s.Err = true, nil
		s.KubernetesVersion, s.UnavailableKinds = r.version, r.missing
	})
	c.swap(r)
	metrics.WorkerConnected.WithLabelValues(c.name).Set(1)
}

func (c *connection) failed(err *Error) {
	c.update(func(s *State) {
		if s.Connected || s.Err == nil {
			s.Since = time.Now()
		}
		s.Connected, s.Err = false, err
	})
	metrics.WorkerConnected.WithLabelValues(c.name).Set(0)
}

// update changes the state and notifies watchers if anything they show
// changed.
func (c *connection) update(change func(*State)) {
	c.mu.Lock()
	before := c.state
	change(&c.state)
	after := c.state
	c.mu.Unlock()
	if !sameState(before, after) {
		c.notify()
	}
}

func sameState(a, b State) bool {
	sameErr := (a.Err == nil) == (b.Err == nil) && (a.Err == nil || (a.Err.Reason == b.Err.Reason && a.Err.Message == b.Err.Message))
	return a.Connected == b.Connected && sameErr && a.KubernetesVersion == b.KubernetesVersion &&
		slices.Equal(a.UnavailableKinds, b.UnavailableKinds) &&
		// What the WorkerCluster's FenceReady condition shows.
		(a.Heartbeat.Err == "") == (b.Heartbeat.Err == "") && a.Fence.Answering == b.Fence.Answering &&
		a.Fence.Manager == b.Fence.Manager && slices.Equal(a.Fence.Fencing, b.Fence.Fencing)
}

// swap installs r as the connection's Remote and stops the one it replaces.
func (c *connection) swap(r *Remote) {
	c.mu.Lock()
	old := c.remote
	c.remote = r
	c.mu.Unlock()
	if old != nil && old != r {
		old.close()
	}
}

func newBackoff(initial, limit time.Duration) wait.Backoff {
	return wait.Backoff{Duration: initial, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: limit}
}

// notConnectedError explains why Get found no Remote.
func notConnectedError(s State) error {
	if s.Err != nil {
		return errors.Join(ErrNotConnected, s.Err)
	}
	return errors.Join(ErrNotConnected, &Error{Reason: courier.ReasonUnreachable, Message: "The first connection attempt is under way."})
}
