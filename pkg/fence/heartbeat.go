package fence

import (
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

// heartbeats tracks, per origin, when the fence first saw the current
// version of its heartbeat Lease.
type heartbeats struct {
	// start is the fence's start: a Lease present at the first successful
	// list counts from it, since the fence cannot know when it was renewed.
	start    time.Time
	listed   bool
	byOrigin map[string]*heartbeat
}

type heartbeat struct {
	version string
	Heartbeat
}

// changes is what one list showed that was not known before.
type changes struct {
	added, renewed, gone []string
}

func newHeartbeats(start time.Time) *heartbeats {
	return &heartbeats{start: start, byOrigin: map[string]*heartbeat{}}
}

// originOf is the origin whose heartbeat a Lease is, if it is one.
func originOf(lease *coordinationv1.Lease) (string, bool) {
	origin, ok := strings.CutPrefix(lease.Name, courier.HeartbeatLeasePrefix)
	return origin, ok && origin != ""
}

// durationOf is a heartbeat Lease's leaseDurationSeconds; one without a
// positive duration counts with Courier's default fence timeout.
func durationOf(lease *coordinationv1.Lease) time.Duration {
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return configv1alpha1.DefaultFenceTimeout
}

// observe records a successful list of the fence's namespace, sent at sent:
// a Lease in a new version counts from sent (from the fence's start at the
// first list), and an origin whose Lease is gone is forgotten.
func (h *heartbeats) observe(sent time.Time, leases []coordinationv1.Lease) changes {
	seen := h.start
	if h.listed {
		seen = sent
	}
	h.listed = true
	var c changes
	present := map[string]bool{}
	for i := range leases {
		lease := &leases[i]
		origin, ok := originOf(lease)
		if !ok {
			continue
		}
		present[origin] = true
		hb, known := h.byOrigin[origin]
		if !known {
			hb = &heartbeat{}
			h.byOrigin[origin] = hb
			c.added = append(c.added, origin)
		}
		hb.Duration = durationOf(lease)
		if hb.version == lease.ResourceVersion {
			continue
		}
		if known {
			c.renewed = append(c.renewed, origin)
		}
		hb.version, hb.Seen = lease.ResourceVersion, seen
	}
	for origin := range h.byOrigin {
		if !present[origin] {
			delete(h.byOrigin, origin)
			c.gone = append(c.gone, origin)
		}
	}
	return c
}
