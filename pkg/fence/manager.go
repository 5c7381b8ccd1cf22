package fence

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// ManagerState is the value of the fence Lease's courier.dev/fence-manager
// annotation.
type ManagerState string

const (
	// ManagerReading: the last read of the WorkerCluster succeeded.
	ManagerReading ManagerState = "Reading"
	// ManagerUnreachable: the last read failed, or none has succeeded yet.
	ManagerUnreachable ManagerState = "Unreachable"
	// ManagerUnconfigured: the fence was given no manager to read.
	ManagerUnconfigured ManagerState = "Unconfigured"
)

// managerReader reads the fence's WorkerCluster on the manager, in the
// background, so that a slow manager never delays a heartbeat list.
type managerReader struct {
	client   client.Reader
	name     string
	interval time.Duration

	mu      sync.Mutex
	view    ManagerView
	lastErr error
}

// newManagerReader returns a reader of WorkerCluster name through c, whose
// requests time out, every interval; a nil c is a fence with no manager.
func newManagerReader(c client.Reader, name string, interval time.Duration, start time.Time) *managerReader {
	r := &managerReader{client: c, name: name, interval: interval}
	if c != nil {
		r.view = ManagerView{Configured: true, Since: start}
	}
	return r
}

// run reads every interval until ctx ends.
func (r *managerReader) run(ctx context.Context) {
	if r.client == nil {
		return
	}
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		r.read(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// read gets the WorkerCluster once. A WorkerCluster that does not exist is
// a successful read that revokes: the manager no longer counts on this
// worker.
func (r *managerReader) read(ctx context.Context) {
	sent := time.Now()
	wc := &courier.WorkerCluster{}
	err := r.client.Get(ctx, client.ObjectKey{Name: r.name}, wc)
	revoked := wc.Status.RevokedSince != nil
	if apierrors.IsNotFound(err) {
		err, revoked = nil, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.lastErr = fmt.Errorf("reading WorkerCluster %s on the manager: %w", r.name, err)
		return
	}
	r.view.ReadAt, r.view.Revoked, r.lastErr = sent, revoked, nil
}

// snapshot returns, at now, the view to decide on, the state to publish,
// and the error of the last read, if it failed. The manager is Reading
// while reads succeed, one each interval: a read that hangs makes it
// Unreachable once it has outlasted a request's timeout.
func (r *managerReader) snapshot(now time.Time) (ManagerView, ManagerState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.client == nil:
		return r.view, ManagerUnconfigured, nil
	case r.lastErr == nil && !r.view.ReadAt.IsZero() && now.Sub(r.view.ReadAt) <= requestTimeout+r.interval:
		return r.view, ManagerReading, nil
	default:
		return r.view, ManagerUnreachable, r.lastErr
	}
}
