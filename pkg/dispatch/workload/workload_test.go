package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestRemoteWorkload(t *testing.T) {
	cases := map[string]struct {
		local *kueue.Workload
		gated bool
		want  *kueue.Workload
	}{
		"metadata subset, spec, origin, manager UID and admission; no owner, status, job UID or finalizer": {
			local: kueuetesting.MakeWorkload("wl", "ns").UID("uid-1").Queue("lq").
				Label("team", "a").Label("kueue.x-k8s.io/job-uid", "job-uid").
				Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "job-uid").
				ReserveQuota("cq").ClusterName("w1").Obj(),
			want: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").Queue("lq").Label("team", "a").Label("courier.dev/origin", "org").Obj()
				wl.Annotations = map[string]string{"courier.dev/manager-workload-uid": "uid-1", "courier.dev/admission": "0"}
				return wl
			}(),
		},
		"to a worker that takes preemption gates: Courier's gate, not the manager's": {
			local: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").UID("uid-1").Queue("lq").Obj()
				wl.Spec.PreemptionGates = []kueue.PreemptionGate{{Name: "managers-own"}}
				return wl
			}(),
			gated: true,
			want: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").Queue("lq").Label("courier.dev/origin", "org").Obj()
				wl.Annotations = map[string]string{"courier.dev/manager-workload-uid": "uid-1", "courier.dev/admission": "0"}
				wl.Spec.PreemptionGates = []kueue.PreemptionGate{{Name: "courier.dev/preemption"}}
				return wl
			}(),
		},
		"to a worker that does not: no gate": {
			local: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").UID("uid-1").Queue("lq").Obj()
				wl.Spec.PreemptionGates = []kueue.PreemptionGate{{Name: "managers-own"}}
				return wl
			}(),
			want: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").Queue("lq").Label("courier.dev/origin", "org").Obj()
				wl.Annotations = map[string]string{"courier.dev/manager-workload-uid": "uid-1", "courier.dev/admission": "0"}
				return wl
			}(),
		},
		"after two evictions, the copy says it is for the third admission": {
			local: kueuetesting.MakeWorkload("wl", "ns").UID("uid-1").Queue("lq").Evicted("Preempted", 1).Evicted("Deactivated", 1).Obj(),
			want: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").Queue("lq").Label("courier.dev/origin", "org").Obj()
				wl.Annotations = map[string]string{"courier.dev/manager-workload-uid": "uid-1", "courier.dev/admission": "2"}
				return wl
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CopyFor(tc.local, "org", tc.gated)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CopyFor() mismatch (-want +got):\n%s", diff)
			}
			if !IsCopyOf(got, tc.local) {
				t.Error("IsCopyOf(copy, local) = false")
			}
			other := tc.local.DeepCopy()
			other.UID = "uid-2"
			if IsCopyOf(got, other) {
				t.Error("a copy of an earlier Workload must not count as a copy of a new one")
			}
			if _, ok := tc.local.Labels["courier.dev/origin"]; ok {
				t.Error("CopyFor() modified its input")
			}
		})
	}
}

func TestOfEarlierAdmission(t *testing.T) {
	cases := map[string]struct {
		annotation string
		evictions  int32
		want       bool
	}{
		"made for this admission":          {annotation: "1", evictions: 1},
		"made before the last eviction":    {annotation: "0", evictions: 1, want: true},
		"made before admissions were kept": {evictions: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := kueuetesting.MakeWorkload("wl", "ns").Evicted("Preempted", tc.evictions).Obj()
			copy := kueuetesting.MakeWorkload("wl", "ns").Obj()
			if tc.annotation != "" {
				copy.Annotations = map[string]string{"courier.dev/admission": tc.annotation}
			}
			if got := OfEarlierAdmission(copy, wl); got != tc.want {
				t.Errorf("OfEarlierAdmission() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlacementOf(t *testing.T) {
	cases := map[string]struct {
		annotation *string
		want       *Placement
		wantErr    bool
	}{
		"none":           {},
		"one of Courier": {annotation: new(`{"cluster":"w1","evictions":2}`), want: &Placement{Cluster: "w1", Evictions: 2}},
		"not JSON":       {annotation: new("w1"), wantErr: true},
		"no cluster":     {annotation: new(`{"evictions":2}`), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := kueuetesting.MakeWorkload("wl", "ns")
			if tc.annotation != nil {
				w.Annotation(courier.PlacementAnnotation, *tc.annotation)
			}
			got, err := PlacementOf(w.Obj())
			if (err != nil) != tc.wantErr {
				t.Fatalf("PlacementOf() error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PlacementOf() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
