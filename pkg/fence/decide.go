package fence

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Verdict is what the fence does about one origin.
type Verdict string

const (
	// Fresh: the heartbeat changed within its duration; nothing to do.
	Fresh Verdict = "Fresh"
	// Held: the heartbeat is stale, but the manager, read recently, has not
	// revoked the worker: Courier is cut off from the worker and is not
	// moving its jobs, so they go on.
	Held Verdict = "Held"
	// Fenced: the origin's copies are stopped.
	Fenced Verdict = "Fenced"
)

// Reason says why a verdict was reached, for logs and events.
type Reason string

const (
	ReasonHeartbeatFresh     Reason = "HeartbeatFresh"
	ReasonNotRevoked         Reason = "ManagerNotRevoked"
	ReasonManagerNotReadYet  Reason = "ManagerNotReadYet"
	ReasonNoManager          Reason = "NoManager"
	ReasonRevoked            Reason = "WorkerRevoked"
	ReasonManagerUnreachable Reason = "ManagerUnreachable"
)

// Heartbeat is what the fence knows of one origin's heartbeat, by its own
// clock.
type Heartbeat struct {
	// Seen is the send time of the list that first showed the heartbeat's
	// current version, or the fence's start for one present at its first
	// list.
	Seen time.Time
	// Duration is the heartbeat's leaseDurationSeconds: how long it may go
	// unchanged before it is stale.
	Duration time.Duration
}

// ManagerView is what the fence knows of its WorkerCluster on the manager,
// by its own clock.
type ManagerView struct {
	// Configured is false when the fence was given no manager to read.
	Configured bool
	// Since is when the fence began reading the manager: until a read
	// succeeds, the manager counts as unreadable from then.
	Since time.Time
	// ReadAt is the send time of the last successful read; zero if none.
	ReadAt time.Time
	// Revoked is whether that read showed status.revokedSince, or no
	// WorkerCluster at all.
	Revoked bool
}

// Decision is a verdict and its reason.
type Decision struct {
	Verdict Verdict
	Reason  Reason
}

// Decide is what the fence does about one origin at now. Every time is the
// fence's own; no time of Courier's is compared with it.
func Decide(now time.Time, hb Heartbeat, m ManagerView) Decision {
	if now.Sub(hb.Seen) <= hb.Duration {
		return Decision{Fresh, ReasonHeartbeatFresh}
	}
	if !m.Configured {
		return Decision{Fenced, ReasonNoManager}
	}
	if !m.ReadAt.IsZero() && m.Revoked {
		return Decision{Fenced, ReasonRevoked}
	}
	lastRead := m.ReadAt
	if lastRead.IsZero() {
		lastRead = m.Since
	}
	if now.Sub(lastRead) > hb.Duration {
		return Decision{Fenced, ReasonManagerUnreachable}
	}
	if m.ReadAt.IsZero() {
		return Decision{Held, ReasonManagerNotReadYet}
	}
	return Decision{Held, ReasonNotRevoked}
}

// needsFence reports whether a Workload of a fenced origin is still to be
// stopped: not finished, and not already inactive.
func needsFence(wl *kueue.Workload) bool {
	if wl.Spec.Active != nil && !*wl.Spec.Active {
		return false
	}
	return !meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
}
