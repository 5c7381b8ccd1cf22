package act

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/testing/workers"
)

func TestWithRemoval(t *testing.T) {
	const removed = "Removed the workload's copies from b."
	cases := map[string]struct {
		events []plan.Event
		want   []plan.Event
	}{
		"on dispatch, the Dispatched event says it": {
			events: []plan.Event{{Type: "Normal", Reason: courier.EventDispatched, Message: `Dispatched to worker "a".`}},
			want:   []plan.Event{{Type: "Normal", Reason: "Dispatched", Message: `Dispatched to worker "a". ` + removed}},
		},
		"otherwise an event of its own": {
			events: []plan.Event{{Type: "Warning", Reason: "RemoteEvicted", Message: "evicted"}},
			want:   []plan.Event{{Type: "Warning", Reason: "RemoteEvicted", Message: "evicted"}, {Type: "Normal", Reason: "RemoteDeleted", Message: removed}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withRemoval(tc.events, removed)); diff != "" {
				t.Errorf("withRemoval() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A write the API server stored nothing new for brings no event: a pass
// must not wait for one.
func TestWroteOver(t *testing.T) {
	cases := map[string]struct {
		stored string
		want   bool
	}{
		"a write that stored a new version": {stored: "11", want: true},
		"a write that changed nothing":      {stored: "10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := newActor(workers.Remotes{})
			a.wroteOver(&metav1.ObjectMeta{UID: "wl", ResourceVersion: tc.stored}, "10")
			if got := a.Expectations.Behind("wl", "10", now); got != tc.want {
				t.Errorf("the version written over is awaited: %v, want %v", got, tc.want)
			}
		})
	}
}
