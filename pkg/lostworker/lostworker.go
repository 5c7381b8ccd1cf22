// Package lostworker decides what becomes of the jobs of a worker Courier
// cannot reach, as pure functions that the WorkerCluster controller and
// the dispatcher share:
//
//   - the policy a worker's jobs follow: the WorkerCluster's own, or the
//     Configuration's (Fenced by default);
//   - whether Courier takes the workers' disconnects for a fault on its own
//     side (SelfFault), in which case nothing moves;
//   - when a worker is revoked under the Fenced policy (Revoke), which its
//     fence reads, and from when its jobs may move (MovableAt);
//   - the lost clocks, which never run from before Courier started: after
//     a restart, only what this process observed counts.
package lostworker

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Settings are the Configuration's lost-worker settings.
type Settings struct {
	// Policy is the default policy.
	Policy courier.LostWorkerPolicy
	// Timeout is workerLostTimeout.
	Timeout time.Duration
	// FenceMargin is how long after a revocation the worker's fence must
	// have stopped its jobs (configv1alpha1.MinFencedLostTimeout).
	FenceMargin time.Duration
	// SelfFaultShare (percent) and SelfFaultWindow: that share of the
	// workers out of reach within that window is a fault of Courier's own.
	SelfFaultShare  int32
	SelfFaultWindow time.Duration
	// Started is when this Courier process started.
	Started time.Time
}

// PolicyOf is the policy the jobs of worker wc follow.
func PolicyOf(wc *courier.WorkerCluster, s Settings) courier.LostWorkerPolicy {
	if wc != nil && wc.Spec.LostWorkerPolicy != "" {
		return wc.Spec.LostWorkerPolicy
	}
	return s.Policy
}

// Clamp is t, or Courier's start if t is earlier: a lost clock never
// carries over a restart.
func Clamp(t time.Time, s Settings) time.Time {
	if t.Before(s.Started) {
		return s.Started
	}
	return t
}

// SelfFault says why Courier takes the workers out of its reach for a
// fault on its own side (its DNS, egress or network policy), or "": at
// least SelfFaultShare percent of the workers that have been Active, two
// or more, lost within SelfFaultWindow of one another. A worker being
// deleted does not count: its jobs go where its operator sends them.
func SelfFault(workers []*courier.WorkerCluster, s Settings) string {
	var counted int
	var lost []time.Time
	for _, wc := range workers {
		if wc.DeletionTimestamp != nil || !beenActive(wc.Status) {
			continue
		}
		counted++
		if unreachable(wc) {
			lost = append(lost, wc.Status.DisconnectedSince.Time)
		}
	}
	if counted < 2 || len(lost) < 2 {
		return ""
	}
	slices.SortFunc(lost, func(a, b time.Time) int { return a.Compare(b) })
	best, from := 0, 0
	for i, j := 0, 0; j < len(lost); j++ {
		for lost[j].Sub(lost[i]) > s.SelfFaultWindow {
			i++
		}
		if j-i+1 > best {
			best, from = j-i+1, i
		}
	}
	if int32(best*100) < s.SelfFaultShare*int32(counted) {
		return ""
	}
	return fmt.Sprintf("%d of %d workers went out of Courier's reach within %s (from %s): Courier takes it for a fault on its own side and moves none of their jobs",
		best, counted, s.SelfFaultWindow, lost[from].UTC().Format(time.RFC3339))
}

// unreachable reports whether a worker is out of reach for the network:
// not for a configuration error, which is no fault of the network's.
func unreachable(wc *courier.WorkerCluster) bool {
	active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive)
	return wc.Status.DisconnectedSince != nil && active != nil && active.Status != metav1.ConditionTrue &&
		(active.Reason == courier.ReasonUnreachable || active.Reason == courier.ReasonSelfFault)
}

// FenceAnswered reports whether a fence answered on worker wc when
// Courier last reached it: FenceReady True, or False for a heartbeat
// failing or a fence already stopping Courier's copies, both of which the
// fence answers by stopping them. A worker whose API server goes down
// fails Courier's heartbeat before its health checks count it lost, so a
// failing heartbeat is often the last thing Courier saw there.
func FenceAnswered(wc *courier.WorkerCluster) bool {
	c := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterFenceReady)
	if c == nil {
		return false
	}
	switch c.Reason {
	case courier.ReasonFenceAnswering:
		return c.Status == metav1.ConditionTrue
	case courier.ReasonHeartbeatFailing, courier.ReasonFenceStopping:
		return true
	}
	return false
}

// Revoke says whether Courier gives worker wc up now, under the Fenced
// policy, so that its fence stops Courier's copies there even if it reads
// the manager; and otherwise when to look again (0 for never). The worker
// is out of reach, a fence answered there, and the fault is not Courier's
// own; it is given up FenceMargin before its jobs may move,
// workerLostTimeout after Courier's last heartbeat there (or its start),
// and no sooner than SelfFaultWindow after Courier counted it out of reach:
// a fault of Courier's own takes the other workers out of reach within
// that window, but Courier counts each as its own health checks fail, some
// seconds apart, and the first one counted must not be given up before
// the others are, which a short workerLostTimeout would otherwise allow.
func Revoke(wc *courier.WorkerCluster, connected bool, lastHeartbeat, now time.Time, selfFault string, s Settings) (bool, time.Duration) {
	if connected || PolicyOf(wc, s) != courier.LostWorkerFenced || !FenceAnswered(wc) || selfFault != "" {
		return false, 0
	}
	if wc.Status.DisconnectedSince == nil && wc.DeletionTimestamp == nil {
		return false, 0 // Never connected, or connecting: no job of it runs.
	}
	due := Clamp(lastHeartbeat, s).Add(s.Timeout - s.FenceMargin)
	if ds := wc.Status.DisconnectedSince; ds != nil {
		if seen := Clamp(ds.Time, s).Add(s.SelfFaultWindow); seen.After(due) {
			due = seen
		}
	}
	if wait := due.Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// MovableAt is when the jobs of revoked worker wc may move: a fence
// margin after its revocation, counted from no earlier than Courier's
// start, since the revocation may have been written by another process's
// clock. Nil when the worker is not revoked.
func MovableAt(wc *courier.WorkerCluster, s Settings) *metav1.Time {
	if wc.Status.RevokedSince == nil {
		return nil
	}
	return &metav1.Time{Time: Clamp(wc.Status.RevokedSince.Time, s).Add(s.FenceMargin)}
}

func beenActive(st courier.WorkerClusterStatus) bool {
	return st.KubernetesVersion != "" || meta.IsStatusConditionTrue(st.Conditions, courier.WorkerClusterActive)
}
