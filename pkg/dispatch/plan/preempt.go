package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// gateOpenWait is how long the worker whose gate Courier opened has to
// preempt and admit the workload before another worker's gate may open
// too: a preemption that cannot succeed there must not hold the workload
// for ever.
const gateOpenWait = 2 * time.Minute

// gateToOpen is the nominated worker that may now preempt for the
// workload behind Courier's preemption gate, and otherwise when to look
// again (0: when something changes). Of the copies whose Kueue holds a
// preemption back (BlockedOnPreemptionGates), the one that asked first
// goes, while no nominated worker may preempt without a gate and no gate
// opened within gateOpenWait still holds a copy waiting.
func gateToOpen(o Observed, nominated []string) (string, time.Duration) {
	if o.Decision != nil && o.Decision.Preempting != "" {
		return "", 0
	}
	var best string
	var asked time.Time
	for _, c := range nominated {
		wl := o.Remotes[c].Workload
		if wl == nil || wl.DeletionTimestamp != nil || !o.Health[c].Connected {
			continue
		}
		if opened := gateOpened(o.Remotes[c]); opened != nil {
			if open := o.Now.Sub(opened.Time); open < gateOpenWait {
				return "", gateOpenWait - open
			}
			continue
		}
		blocked := findCondition(wl.Status.Conditions, kueue.WorkloadBlockedOnPreemptionGates)
		if blocked == nil || blocked.Status != metav1.ConditionTrue {
			continue
		}
		if best == "" || blocked.LastTransitionTime.Time.Before(asked) {
			best, asked = c, blocked.LastTransitionTime.Time
		}
	}
	return best, 0
}

// gateOpened is when Courier's preemption gate on the worker's copy
// opened, as its Kueue lists it or as Courier opened it, nil while it is
// closed.
func gateOpened(r Remote) *metav1.Time {
	if gate := courierGate(r.Workload); gate != nil && gate.Position == kueue.PreemptionGatePositionOpen {
		return &gate.LastTransitionTime
	}
	return r.GateOpened
}

// courierGate is the state of Courier's preemption gate on a worker's
// copy, nil if the worker's Kueue does not list it.
func courierGate(wl *kueue.Workload) *kueue.PreemptionGateState {
	for i := range wl.Status.PreemptionGates {
		if wl.Status.PreemptionGates[i].Name == courier.PreemptionGate {
			return &wl.Status.PreemptionGates[i]
		}
	}
	return nil
}

// planGate opens the preemption gate gateToOpen chooses, if any, with an
// event that says why.
func planGate(o Observed, p Plan, nominated []string) Plan {
	c, wait := gateToOpen(o, nominated)
	p.RequeueAfter = Soonest(p.RequeueAfter, wait)
	if c == "" {
		return p
	}
	p.OpenGate = c
	p.Events = append(p.Events, Event{Type: "Normal", Reason: courier.EventPreemptionAllowed, Cluster: c,
		Message: fmt.Sprintf("Worker %q may preempt for the workload: its Kueue found no room without preempting, it asked first, and no other worker is preempting for it.", c)})
	return p
}
