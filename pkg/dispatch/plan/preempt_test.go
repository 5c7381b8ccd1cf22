package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// gatedCopy is a worker's copy with Courier's gate in the given position
// since at, and, when blocked is not zero, blocked on it since then.
func gatedCopy(position kueue.PreemptionGatePosition, at, blocked time.Time) *kueue.Workload {
	wl := kueueCopy()
	wl.Status.PreemptionGates = []kueue.PreemptionGateState{{Name: courier.PreemptionGate, Position: position, LastTransitionTime: metav1.NewTime(at)}}
	if !blocked.IsZero() {
		wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadBlockedOnPreemptionGates,
			Status: metav1.ConditionTrue, Reason: kueue.PreemptionGated, LastTransitionTime: metav1.NewTime(blocked)})
	}
	return wl
}

func kueueCopy() *kueue.Workload { return copyOf().Obj() }

func TestGateToOpen(t *testing.T) {
	closed := kueue.PreemptionGatePositionClosed
	open := kueue.PreemptionGatePositionOpen
	cases := map[string]struct {
		decision *placement.Decision
		remotes  map[string]Remote
		health   map[string]Health
		want     string
		wantWait time.Duration
	}{
		"the first to ask goes": {
			remotes: map[string]Remote{
				"a": {Workload: gatedCopy(closed, t0, now.Add(-time.Second))},
				"b": {Workload: gatedCopy(closed, t0, now.Add(-2*time.Second))},
			},
			want: "b",
		},
		"two ask in the same second: the first nominated goes": {
			remotes: map[string]Remote{
				"a": {Workload: gatedCopy(closed, t0, now.Add(-time.Second))},
				"b": {Workload: gatedCopy(closed, t0, now.Add(-time.Second))},
			},
			want: "a",
		},
		"none asks: none goes": {
			remotes: map[string]Remote{"a": {Workload: gatedCopy(closed, t0, time.Time{})}, "b": {Workload: kueueCopy()}},
		},
		"one opened a moment ago: the other waits its turn": {
			remotes: map[string]Remote{
				"a": {Workload: gatedCopy(open, now.Add(-30*time.Second), now.Add(-time.Minute))},
				"b": {Workload: gatedCopy(closed, t0, now.Add(-2*time.Minute))},
			},
			wantWait: gateOpenWait - 30*time.Second,
		},
		"one Courier opened that the informer shows closed still: the other waits its turn": {
			remotes: map[string]Remote{
				"a": {Workload: gatedCopy(closed, t0, now.Add(-time.Minute)), GateOpened: &metav1.Time{Time: now.Add(-time.Second)}},
				"b": {Workload: gatedCopy(closed, t0, now.Add(-2*time.Minute))},
			},
			wantWait: gateOpenWait - time.Second,
		},
		"one opened long ago that has not admitted: the next may preempt too": {
			remotes: map[string]Remote{
				"a": {Workload: gatedCopy(open, now.Add(-gateOpenWait), now.Add(-time.Hour))},
				"b": {Workload: gatedCopy(closed, t0, now.Add(-2*time.Minute))},
			},
			want: "b",
		},
		"a worker without gates may preempt already: no gate opens": {
			decision: &placement.Decision{Preempting: "c"},
			remotes:  map[string]Remote{"a": {Workload: gatedCopy(closed, t0, now.Add(-time.Second))}},
		},
		"a worker out of reach is not chosen": {
			remotes: map[string]Remote{
				"a": {Workload: gatedCopy(closed, t0, now.Add(-time.Hour))},
				"b": {Workload: gatedCopy(closed, t0, now.Add(-time.Second))},
			},
			health: map[string]Health{"a": {}, "b": {Connected: true}},
			want:   "b",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			health := tc.health
			if health == nil {
				health = connected
			}
			o := Observed{Now: now, Decision: tc.decision, Remotes: tc.remotes, Health: health}
			got, wait := gateToOpen(o, []string{"a", "b"})
			if diff := cmp.Diff([]any{tc.want, tc.wantWait}, []any{got, wait}); diff != "" {
				t.Errorf("gateToOpen() (-want +got):\n%s", diff)
			}
		})
	}
}

// A workload workers evicted too often for one reason stops bouncing.
func TestPlanMovesExhausted(t *testing.T) {
	moves := func(reasons ...string) []workload.Move {
		var out []workload.Move
		for i, r := range reasons {
			out = append(out, workload.Move{Cluster: []string{"a", "b"}[i%2], Reason: r})
		}
		return out
	}
	observed := func(onExhausted courier.MovesExhaustedAction, m []workload.Move) Observed {
		return Observed{Workload: local().Obj(), Check: pendingCheck, HasCheck: true, Candidates: both, Health: connected, Moves: m,
			Remotes: map[string]Remote{"b": {Workload: copyOf().Obj()}},
			PlacementInput: &placement.Input{Policy: placement.Policy{MaxMoves: 3, OnMovesExhausted: onExhausted},
				Clusters: []placement.Cluster{{Name: "b"}}, Started: t0, Now: now}}
	}
	const msg = "Workers evicted the workload for Preempted more than the policy's maxMoves (3) times: a: Preempted; b: Preempted; a: Preempted; b: Preempted."
	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"one reason once too often, Reject: Rejected, with each worker's reason": {
			o: observed(courier.RejectWhenMovesExhausted, moves("Preempted", "Preempted", "Preempted", "Preempted")),
			want: Plan{Delete: []string{"b"}, Status: &StatusChange{State: kueue.CheckStateRejected, Message: msg},
				Events: []Event{{Type: "Warning", Reason: courier.EventMovesExhausted, Message: msg}}},
		},
		"one reason once too often, Wait: pending, sent nowhere": {
			o: observed(courier.WaitWhenMovesExhausted, moves("Preempted", "Preempted", "Preempted", "Preempted")),
			want: Plan{Delete: []string{"b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: msg + " It waits, sent nowhere, until the annotation courier.dev/moves is removed from it."},
				Events: []Event{{Type: "Warning", Reason: courier.EventMovesExhausted, Message: msg}}},
		},
		"as many moves, for several reasons: dispatched as usual": {
			o: observed(courier.RejectWhenMovesExhausted, moves("Preempted", "Fenced", "Preempted", "Preempted")),
			want: Plan{Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
				Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 1)."}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Decide(tc.o), cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Plan{}, "Decision")); diff != "" {
				t.Errorf("Decide() (-want +got):\n%s", diff)
			}
		})
	}
}
