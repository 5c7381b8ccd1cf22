package expect

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// GateTTL is how long a preemption gate Courier opened counts as open
// while the worker's informer shows it closed.
const GateTTL = 2 * time.Minute

// GateOpened records that Courier opened its preemption gate on the
// Workload copy copy: a pass before the informer shows it would open
// another worker's too, and two workers would preempt for one job.
func (e *Expectations) GateOpened(copy types.UID, now time.Time) { e.gates.put(copy, struct{}{}, now) }

// GateOpenedAt reports when Courier opened its preemption gate on the
// Workload copy copy, if it did lately.
func (e *Expectations) GateOpenedAt(copy types.UID, now time.Time) (time.Time, bool) {
	_, at, ok := e.gates.get(copy, now)
	return at, ok
}
