package expect

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// RoundsStart returns when Courier first saw Workload wl nominated, for
// the policy's rounds to count from, if it has: a workload first planned
// long after its quota was reserved (a backlog, a restart) starts at
// round 0 rather than with many workers at once.
func (e *Expectations) RoundsStart(wl types.UID, now time.Time) (time.Time, bool) {
	_, at, ok := e.rounds.get(wl, now)
	return at, ok
}

// StartRounds records that Workload wl was first seen nominated at at.
func (e *Expectations) StartRounds(wl types.UID, at time.Time) {
	if _, ok := e.RoundsStart(wl, at); !ok {
		e.rounds.put(wl, struct{}{}, at)
	}
}

// EndRounds forgets when Workload wl's rounds started: it is not nominated
// any more, and the rounds of a later admission start afresh.
func (e *Expectations) EndRounds(wl types.UID) { e.rounds.remove(wl, nil) }
