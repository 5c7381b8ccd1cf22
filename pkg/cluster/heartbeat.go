package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Heartbeat is the Lease Courier renews on each worker it reaches, which
// the worker's fence watches (see cmd/courier-fence): once it has seen no
// renewal for Duration, the fence stops Courier's copies there, unless it
// reads from the manager that Courier has not given the worker up.
type Heartbeat struct {
	// Namespace on each worker of the heartbeat Lease and of the fence.
	Namespace string
	// Interval between renewals.
	Interval time.Duration
	// Duration is the fence's timeout, written as the Lease's duration.
	Duration time.Duration
}

// HeartbeatState is what Courier knows of its heartbeat on one worker.
type HeartbeatState struct {
	// LastAttempt is when Courier last sent a renewal, which the worker
	// may have stored whatever the answer; zero before the first. The
	// lost-worker policy counts from it.
	LastAttempt time.Time
	// LastRenewed is when a renewal last succeeded.
	LastRenewed time.Time
	// Err says why the last renewal failed, "" if it did not.
	Err string
}

// FenceState is what Courier sees of the fence on one worker, from the
// fence's own Lease.
type FenceState struct {
	// Answering: the fence's Lease changed within fenceAnswerWindow, by
	// Courier's clock, the last time Courier read it.
	Answering bool
	// LastChange is when Courier saw the fence's Lease change.
	LastChange time.Time
	// Manager says whether the fence reads its WorkerCluster on the
	// manager: Reading, Unreachable or Unconfigured.
	Manager string
	// Fencing are the origins whose copies the fence is stopping.
	Fencing []string
	// version is the fence Lease's resourceVersion last seen.
	version string
}

// fenceAnswerWindow is how long the fence's Lease may stay unchanged
// before Courier no longer counts the fence as answering: the fence renews
// it every 10 s.
const fenceAnswerWindow = time.Minute

// beat renews Courier's heartbeat on r and reads the fence's Lease, and
// records both in the connection's state. A failure is recorded, not
// returned: health, not the heartbeat, decides whether the worker is
// reachable.
func (c *connection) beat(ctx context.Context, r *Remote) {
	hb := c.opts.Heartbeat
	attempt := time.Now()
	c.update(func(s *State) { s.Heartbeat.LastAttempt = attempt })
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	err := renewHeartbeat(ctx, r.Client, hb, c.opts.Origin, attempt)
	fence, ferr := readFence(ctx, r.APIReader, hb.Namespace)
	now := time.Now()
	c.update(func(s *State) {
		if err != nil {
			s.Heartbeat.Err = fmt.Sprintf("renewing the heartbeat Lease %s/%s%s: %v", hb.Namespace, courier.HeartbeatLeasePrefix, c.opts.Origin, err)
		} else {
			s.Heartbeat.Err, s.Heartbeat.LastRenewed = "", now
		}
		if ferr == nil {
			s.Fence = observeFence(s.Fence, fence, now)
		}
	})
}

// renewHeartbeat writes the heartbeat Lease of origin, creating it if it
// is missing, in one merge patch otherwise: the fence needs only a new
// resourceVersion, so the write is not guarded by the old one.
func renewHeartbeat(ctx context.Context, c client.Client, hb *Heartbeat, origin string, at time.Time) error {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: hb.Namespace, Name: courier.HeartbeatLeasePrefix + origin,
			Labels: map[string]string{courier.OriginLabel: origin}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(origin),
			LeaseDurationSeconds: ptr.To(int32(hb.Duration / time.Second)),
			RenewTime:            &metav1.MicroTime{Time: at},
		},
	}
	patch, err := json.Marshal(map[string]any{"spec": lease.Spec})
	if err != nil {
		return fmt.Errorf("encoding the heartbeat: %w", err)
	}
	err = c.Patch(ctx, lease.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, lease)
	}
	return err
}

// readFence reads the fence's Lease on a worker; nil if there is none.
func readFence(ctx context.Context, r client.Reader, namespace string) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: courier.FenceLeaseName}, lease)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return lease, err
}

// observeFence updates what Courier knows of a worker's fence from its
// Lease, read at now; lease is nil when the worker has none.
func observeFence(was FenceState, lease *coordinationv1.Lease, now time.Time) FenceState {
	if lease == nil {
		return FenceState{}
	}
	s := was
	if lease.ResourceVersion != s.version {
		s.version, s.LastChange = lease.ResourceVersion, now
	}
	s.Answering = now.Sub(s.LastChange) <= fenceAnswerWindow
	s.Manager = lease.Annotations[courier.FenceManagerAnnotation]
	s.Fencing = nil
	for _, o := range strings.Split(lease.Annotations[courier.FencedOriginsAnnotation], ",") {
		if o = strings.TrimSpace(o); o != "" {
			s.Fencing = append(s.Fencing, o)
		}
	}
	slices.Sort(s.Fencing)
	return s
}
