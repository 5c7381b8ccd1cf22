package workercluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
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
	gpus := []courier.ResourceCapacity{{Flavor: "a100", Resource: "nvidia.com/gpu", Nominal: resource.MustParse("8"), Usage: resource.MustParse("2")}}
	withCapacity := *connected.DeepCopy()
	withCapacity.Capacity, withCapacity.CapacitySummary = gpus, "nvidia.com/gpu 2/8"
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
		"connected with its capacity": {
			old:   connected,
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3", Capacity: &cluster.CapacityReport{Resources: gpus, Summary: "nvidia.com/gpu 2/8"}},
			want:  withCapacity,
		},
		"a capacity held back keeps the last one written": {
			old:   withCapacity,
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3"},
			want:  withCapacity,
		},
		"capacity that cannot be known says why": {
			old:   withCapacity,
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3", Capacity: &cluster.CapacityReport{Summary: "unknown: no RBAC"}},
			want: func() courier.WorkerClusterStatus {
				st := *connected.DeepCopy()
				st.CapacitySummary = "unknown: no RBAC"
				return st
			}(),
		},
		"the probe found the worker's Kueue takes preemption gates": {
			old:   connected,
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3", PreemptionGates: courier.PreemptionGatesEnabled},
			want: func() courier.WorkerClusterStatus {
				st := *connected.DeepCopy()
				st.PreemptionGates = courier.PreemptionGatesEnabled
				return st
			}(),
		},
		"a probe not answered yet keeps what the last one found": {
			old: func() courier.WorkerClusterStatus {
				st := *connected.DeepCopy()
				st.PreemptionGates = courier.PreemptionGatesDisabled
				return st
			}(),
			state: cluster.State{Connected: true, Since: t0, KubernetesVersion: "v1.36.3"},
			want: func() courier.WorkerClusterStatus {
				st := *connected.DeepCopy()
				st.PreemptionGates = courier.PreemptionGatesDisabled
				return st
			}(),
		},
		"network loss keeps the last capacity": {
			old:   withCapacity,
			state: cluster.State{Err: unreachable, Since: t1},
			want: func() courier.WorkerClusterStatus {
				st := *withCapacity.DeepCopy()
				st.ConnectedSince, st.DisconnectedSince = nil, at(t1)
				meta.SetStatusCondition(&st.Conditions, cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable))
				return st
			}(),
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
		"a configuration error on a worker that was Active sets disconnectedSince": {
			old:   connected,
			state: cluster.State{Err: forbidden, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				DisconnectedSince:  at(t1),
				KubernetesVersion:  "v1.36.3",
				Conditions: []metav1.Condition{
					cond(courier.WorkerClusterKindsAvailable, metav1.ConditionTrue, courier.ReasonAllKindsServed),
					cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonForbidden),
				},
			},
		},
		"a configuration error on a worker never Active does not set disconnectedSince": {
			old: courier.WorkerClusterStatus{
				Conditions: []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionUnknown, courier.ReasonConnecting)},
			},
			state: cluster.State{Err: forbidden, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				Conditions:         []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonForbidden)},
			},
		},
		"a configuration error after a restart of Courier, on a worker Active before": {
			old: courier.WorkerClusterStatus{
				KubernetesVersion: "v1.36.3",
				Conditions:        []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionUnknown, courier.ReasonConnecting)},
			},
			state: cluster.State{Err: forbidden, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				DisconnectedSince:  at(t1),
				KubernetesVersion:  "v1.36.3",
				Conditions:         []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonForbidden)},
			},
		},
		"a configuration error after network loss keeps disconnectedSince": {
			old: courier.WorkerClusterStatus{
				DisconnectedSince: at(t0),
				Conditions:        []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable)},
			},
			state: cluster.State{Err: forbidden, Since: t1},
			want: courier.WorkerClusterStatus{
				ObservedGeneration: 3,
				DisconnectedSince:  at(t0),
				Conditions:         []metav1.Condition{cond(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonForbidden)},
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
				cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
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

func TestHoldCapacity(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	capacity := func(gpus string) []courier.ResourceCapacity {
		return []courier.ResourceCapacity{{Flavor: "a100", Resource: "nvidia.com/gpu", Nominal: resource.MustParse("8"), Usage: resource.MustParse(gpus)}}
	}
	observed := &cluster.CapacityReport{Resources: capacity("3"), Summary: "nvidia.com/gpu 3/8"}
	cases := map[string]struct {
		old       courier.WorkerClusterStatus
		written   time.Time
		wantHeld  bool
		wantAfter time.Duration
	}{
		"the first capacity is written at once": {
			old:       courier.WorkerClusterStatus{CapacitySummary: "unknown: no RBAC"},
			written:   now.Add(-time.Second),
			wantAfter: capacityPeriod,
		},
		"an unchanged capacity is looked at again a period later": {
			old:       courier.WorkerClusterStatus{Capacity: capacity("3000m"), CapacitySummary: "nvidia.com/gpu 3/8"},
			written:   now.Add(-time.Second),
			wantAfter: capacityPeriod,
		},
		"a change within a period of the last write waits for its end": {
			old:       courier.WorkerClusterStatus{Capacity: capacity("2"), CapacitySummary: "nvidia.com/gpu 2/8"},
			written:   now.Add(-4 * time.Second),
			wantHeld:  true,
			wantAfter: 6 * time.Second,
		},
		"a change a period after the last write is written": {
			old:       courier.WorkerClusterStatus{Capacity: capacity("2"), CapacitySummary: "nvidia.com/gpu 2/8"},
			written:   now.Add(-capacityPeriod),
			wantAfter: capacityPeriod,
		},
		"a change after a restart of Courier is written": {
			old:       courier.WorkerClusterStatus{Capacity: capacity("2"), CapacitySummary: "nvidia.com/gpu 2/8"},
			wantAfter: capacityPeriod,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{capacityWritten: map[string]time.Time{}}
			if !tc.written.IsZero() {
				r.capacityWritten["w"] = tc.written
			}
			wc := &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Status: tc.old}
			state := cluster.State{Connected: true, Capacity: observed}
			after := r.holdCapacity(wc, &state, now)
			if held := state.Capacity == nil; held != tc.wantHeld {
				t.Errorf("held = %v, want %v", held, tc.wantHeld)
			}
			if diff := cmp.Diff(tc.wantAfter, after); diff != "" {
				t.Errorf("holdCapacity() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
