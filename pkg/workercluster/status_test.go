package workercluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

func TestComputeStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	now := t0.Add(time.Hour)
	at := func(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: 3}
	}
	connected := courier.WorkerClusterStatus{
		ObservedGeneration: 3,
		ConnectedSince:     at(t0),
		KubernetesVersion:  "v1.36.3",
		Conditions: []metav1.Condition{
			cond(courier.WorkerClusterKindsAvailable, metav1.ConditionTrue, courier.ReasonAllKindsServed),
			cond(courier.WorkerClusterActive, metav1.ConditionTrue, courier.ReasonConnected),
		},
	}
	unreachable := &cluster.Error{Reason: courier.ReasonUnreachable, Message: "down"}
	forbidden := &cluster.Error{Reason: courier.ReasonForbidden, Message: "no"}

	cases := map[string]struct {
		old   courier.WorkerClusterStatus
		state cluster.State
		want  courier.WorkerClusterStatus
	}{
		"first attempt under way": {
			state: cluster.State{},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				Conditions:         []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionUnknown, courier.ReasonConnecting)},
			},
		},
		"connected with every kind": {
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3"},
			want:  connected,
		},
		"still connected keeps connectedSince": {
			old:   connected,
			state: cluster.State{Connected: true, Since: t1, KubernetesVersion: "v1.36.3"},
			want:  connected,
		},
		"a missing kind": {
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3", UnavailableKinds: []string{"TrainJob.v1alpha1.trainer.kubeflow.org"}},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				ConnectedSince:     at(t0),
				KubernetesVersion:  "v1.36.3",
				UnavailableKinds:   []string{"TrainJob.v1alpha1.trainer.kubeflow.org"},
				Conditions: []metav1.Condition{
					cond(courier.WorkerClusterKindsAvailable, metav1.ConditionFalse, courier.ReasonKindsMissing),
					cond(courier.WorkerClusterActive, metav1.ConditionTrue, courier.ReasonConnected),
				},
			},
		},
		"network loss sets disconnectedSince and keeps what was seen": {
			old:   connected,
			state: cluster.State{Err: unreachable, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				DisconnectedSince:  at(t1),
				KubernetesVersion:  "v1.36.3",
				Conditions: []metav1.Condition{
					cond(courier.WorkerClusterKindsAvailable, metav1.ConditionTrue, courier.ReasonAllKindsServed),
					cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable),
				},
			},
		},
		"retries do not move disconnectedSince": {
			old: courier.WorkerClusterStatus{
				DisconnectedSince: at(t0),
				Conditions:        []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable)},
			},
			state: cluster.State{Err: unreachable, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				DisconnectedSince:  at(t0),
				Conditions:         []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable)},
			},
		},
		"a configuration error does not set disconnectedSince": {
			old:   connected,
			state: cluster.State{Err: forbidden, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				KubernetesVersion:  "v1.36.3",
				Conditions: []metav1.Condition{
					cond(courier.WorkerClusterKindsAvailable, metav1.ConditionTrue, courier.ReasonAllKindsServed),
					cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonForbidden),
				},
			},
		},
		"reconnecting clears disconnectedSince": {
			old: courier.WorkerClusterStatus{
				DisconnectedSince: at(t0),
				KubernetesVersion: "v1.36.3",
				Conditions:        []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable)},
			},
			state: cluster.State{Connected: true, Since: t1, KubernetesVersion: "v1.36.3"},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				ConnectedSince:     at(t1),
				KubernetesVersion:  "v1.36.3",
				Conditions: []metav1.Condition{
					cond(courier.WorkerClusterActive, metav1.ConditionTrue, courier.ReasonConnected),
					cond(courier.WorkerClusterKindsAvailable, metav1.ConditionTrue, courier.ReasonAllKindsServed),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := computeStatus(tc.old, 3, tc.state, now)
			opts := []cmp.Option{
				cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime", "Message"),
				cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type }),
				cmpopts.EquateEmpty(),
			}
			if diff := cmp.Diff(tc.want, got, opts...); diff != "" {
				t.Errorf("computeStatus() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
