package workercluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

func TestFenceCondition(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	answering := metav1.Condition{Type: courier.WorkerClusterFenceReady, Status: metav1.ConditionTrue, Reason: courier.ReasonFenceAnswering}
	cases := map[string]struct {
		old   []metav1.Condition
		state cluster.State
		want  metav1.ConditionStatus
		why   string
	}{
		"a fence answers, reading the manager": {
			state: cluster.State{Connected: true, Fence: cluster.FenceState{Answering: true, Manager: "Reading"}},
			want:  metav1.ConditionTrue, why: courier.ReasonFenceAnswering,
		},
		"no fence": {
			state: cluster.State{Connected: true},
			want:  metav1.ConditionFalse, why: courier.ReasonNoFence,
		},
		"the heartbeat cannot be renewed": {
			state: cluster.State{Connected: true, Heartbeat: cluster.HeartbeatState{Err: "forbidden"}, Fence: cluster.FenceState{Answering: true}},
			want:  metav1.ConditionFalse, why: courier.ReasonHeartbeatFailing,
		},
		"the fence stops this origin's copies": {
			state: cluster.State{Connected: true, Fence: cluster.FenceState{Answering: true, Fencing: []string{"courier", "other"}}},
			want:  metav1.ConditionFalse, why: courier.ReasonFenceStopping,
		},
		"out of reach: what Courier last saw stands": {
			old:   []metav1.Condition{answering},
			state: cluster.State{Err: &cluster.Error{Reason: courier.ReasonUnreachable}},
			want:  metav1.ConditionTrue, why: courier.ReasonFenceAnswering,
		},
		"never reached": {
			state: cluster.State{},
			want:  metav1.ConditionUnknown, why: courier.ReasonNoFence,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fenceCondition(tc.old, tc.state, "courier", "courier-system", 1, now)
			if diff := cmp.Diff([2]string{string(tc.want), tc.why}, [2]string{string(got.Status), got.Reason}); diff != "" {
				t.Errorf("fenceCondition() (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}
