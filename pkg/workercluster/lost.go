package workercluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/metrics"
)

// lostPeriod is how often a WorkerCluster out of reach is looked at again:
// whether the others' losses make it a fault of Courier's own, and whether
// it is due for revocation.
const lostPeriod = 30 * time.Second

// fenceCondition is the FenceReady condition for what the connection knows
// of the worker's fence and of Courier's heartbeat there. Out of reach, the
// last one stands: it says what the fence did when Courier last saw it.
func fenceCondition(old []metav1.Condition, s cluster.State, origin, namespace string, generation int64, now time.Time) metav1.Condition {
	if was := meta.FindStatusCondition(old, courier.WorkerClusterFenceReady); !s.Connected && was != nil {
		return *was
	}
	c := metav1.Condition{Type: courier.WorkerClusterFenceReady, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case !s.Connected:
		c.Status, c.Reason = metav1.ConditionUnknown, courier.ReasonNoFence
		c.Message = "Courier has not reached the worker yet."
	case !s.Fence.Answering:
		c.Status, c.Reason = metav1.ConditionFalse, courier.ReasonNoFence
		c.Message = fmt.Sprintf("No fence answers in namespace %s on the worker. Under the Fenced policy this worker's jobs never move when it is lost; install config/worker/fence.yaml there (docs/fence.md).", namespace)
	case s.Heartbeat.Err != "":
		// The fence answered when Courier last read its Lease, and will
		// stop Courier's copies once the heartbeat has been silent for its
		// timeout, whatever silenced it.
		c.Status, c.Reason = metav1.ConditionFalse, courier.ReasonHeartbeatFailing
		c.Message = "Courier cannot renew its heartbeat, and the fence will stop its copies: " + s.Heartbeat.Err + "; if the worker answers otherwise, apply config/worker/rbac.yaml on it."
	case containsOrigin(s.Fence.Fencing, origin):
		c.Status, c.Reason = metav1.ConditionFalse, courier.ReasonFenceStopping
		c.Message = "The fence is stopping Courier's copies on the worker: Courier's heartbeat has not reached it for its timeout."
	default:
		c.Status, c.Reason = metav1.ConditionTrue, courier.ReasonFenceAnswering
		c.Message = "A fence answers on the worker, " + fenceManagerWords(s.Fence.Manager)
	}
	return c
}

func fenceManagerWords(manager string) string {
	switch manager {
	case "Reading":
		return "and reads the manager: a fault on Courier's side alone stops no job."
	case "Unreachable":
		return "but cannot read the manager now: if Courier's heartbeat stops, it stops Courier's copies after its timeout, whoever is at fault."
	default:
		return "without access to the manager: if Courier's heartbeat stops, it stops Courier's copies after its timeout, whoever is at fault."
	}
}

func containsOrigin(origins []string, origin string) bool {
	for _, o := range origins {
		if o == origin {
			return true
		}
	}
	return false
}

// lostStatus applies to a worker's computed status what Courier decides of
// its loss: a fault of Courier's own shows on Active, and a worker due
// under the Fenced policy is revoked (revokedSince), which its fence reads;
// reaching it again ends the revocation. It returns when to look again.
func (r *Reconciler) lostStatus(ctx context.Context, wc *courier.WorkerCluster, st *courier.WorkerClusterStatus, s cluster.State, now time.Time) (time.Duration, error) {
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	workers := make([]*courier.WorkerCluster, 0, len(list.Items))
	self := wc.DeepCopy()
	self.Status = *st
	for i := range list.Items {
		if list.Items[i].Name == wc.Name {
			workers = append(workers, self)
			continue
		}
		workers = append(workers, &list.Items[i])
	}
	selfFault := lostworker.SelfFault(workers, r.lost)
	metrics.SelfFault(selfFault != "")
	if active := meta.FindStatusCondition(st.Conditions, courier.WorkerClusterActive); selfFault != "" && active != nil &&
		active.Status != metav1.ConditionTrue && active.Reason == courier.ReasonUnreachable {
		active.Reason, active.Message = courier.ReasonSelfFault, strings.TrimSuffix(active.Message, ".")+". "+selfFault+"."
	}
	if s.Connected {
		st.RevokedSince = nil
		return 0, nil
	}
	revoke, wait := lostworker.Revoke(self, false, s.Heartbeat.LastAttempt, now, selfFault, r.lost)
	if revoke && st.RevokedSince == nil {
		st.RevokedSince = &metav1.Time{Time: now}
	}
	if st.DisconnectedSince == nil {
		return 0, nil
	}
	return min(lostPeriod, max(wait, time.Second)), nil
}

// recordRevocation reports a worker Courier gave up, after the status
// write that records it.
func (r *Reconciler) recordRevocation(wc *courier.WorkerCluster, old courier.WorkerClusterStatus) {
	if old.RevokedSince != nil || wc.Status.RevokedSince == nil {
		return
	}
	// A WorkerCluster made again while its worker is out of reach has
	// never been connected, so no disconnectedSince: its heartbeat's
	// silence revoked it.
	since := ""
	if ds := wc.Status.DisconnectedSince; ds != nil {
		since = " since " + ds.UTC().Format(time.RFC3339)
	}
	r.recorder.Eventf(wc, nil, corev1.EventTypeWarning, courier.EventWorkerRevoked, "Revoke",
		"Courier gave the worker up: out of its reach%s, with no fault of its own in sight. Its fence stops Courier's copies there; their jobs move from %s.",
		since, lostworker.MovableAt(wc, r.lost).UTC().Format(time.RFC3339))
}
