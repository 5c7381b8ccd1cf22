package workercluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

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
		"the heartbeat cannot be renewed, and no fence answers: no fence": {
			state: cluster.State{Connected: true, Heartbeat: cluster.HeartbeatState{Err: "forbidden"}},
			want:  metav1.ConditionFalse, why: courier.ReasonNoFence,
		},
		"out of reach after the heartbeat failed: what Courier last saw stands": {
			old:   []metav1.Condition{{Type: courier.WorkerClusterFenceReady, Status: metav1.ConditionFalse, Reason: courier.ReasonHeartbeatFailing}},
			state: cluster.State{Err: &cluster.Error{Reason: courier.ReasonUnreachable}},
			want:  metav1.ConditionFalse, why: courier.ReasonHeartbeatFailing,
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

func TestRecordRevocation(t *testing.T) {
	revoked := metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	disconnected := metav1.NewTime(revoked.Add(-5 * time.Minute))
	cases := map[string]struct {
		status courier.WorkerClusterStatus
		want   string
	}{
		"out of reach since a time": {
			status: courier.WorkerClusterStatus{RevokedSince: &revoked, DisconnectedSince: &disconnected},
			want:   "Warning WorkerRevoked Courier gave the worker up: out of its reach since 2026-11-28T09:55:00Z, with no fault of its own in sight. Its fence stops Courier's copies there; their jobs move from 2026-11-28T10:00:00Z.",
		},
		// A WorkerCluster made again while its worker was out of reach.
		"never connected": {
			status: courier.WorkerClusterStatus{RevokedSince: &revoked},
			want:   "Warning WorkerRevoked Courier gave the worker up: out of its reach, with no fault of its own in sight. Its fence stops Courier's copies there; their jobs move from 2026-11-28T10:00:00Z.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			recorder := events.NewFakeRecorder(1)
			r := &Reconciler{recorder: recorder}
			r.recordRevocation(&courier.WorkerCluster{Status: tc.status}, courier.WorkerClusterStatus{})
			if diff := cmp.Diff(tc.want, <-recorder.Events); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}
