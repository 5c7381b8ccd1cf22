package expect

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Seen is what one pass's observe step saw that settles expectations, or
// starts one no action of Courier's starts; the act step records it with
// Settle, so that observing writes nothing.
type Seen struct {
	// CaughtUp are manager objects the cache shows past Courier's writes.
	CaughtUp []types.UID
	// Shown are assumed Workload copies the capacity snapshots show.
	Shown []Assumption
	// Deleting are job copies someone else is deleting, whose runners may
	// outlive them.
	Deleting []RemnantNote
	// Gone are remnants that went.
	Gone []RemnantNote
	// Rounds is the Workload whose rounds start or end, if any.
	Rounds *Rounds
}

// Settle records what a pass saw.
func (e *Expectations) Settle(s Seen, now time.Time) {
	for _, uid := range s.CaughtUp {
		e.CaughtUp(uid)
	}
	for _, a := range s.Shown {
		e.Unassume(a.Cluster, a.Workload)
	}
	for _, r := range s.Deleting {
		e.Remnant(r.Key, r.Remnant, now)
	}
	for _, r := range s.Gone {
		e.RemnantGone(r.Key, r.Remnant.Owner)
	}
	if r := s.Rounds; r != nil {
		if r.End {
			e.EndRounds(r.Workload)
		} else {
			e.StartRounds(r.Workload, r.At)
		}
	}
}
