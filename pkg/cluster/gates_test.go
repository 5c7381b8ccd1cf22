package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

func TestProbeGates(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kueue.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	listed := []kueue.PreemptionGateState{{Name: courier.PreemptionGate, Position: kueue.PreemptionGatePositionClosed}}
	// A Kueue that takes gates lists the probe's gate in its status.
	answers := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if err := c.Create(ctx, obj, opts...); err != nil {
			return err
		}
		wl := obj.(*kueue.Workload)
		wl.Status.PreemptionGates = listed
		return c.Status().Update(ctx, wl)
	}}
	cases := map[string]struct {
		funcs interceptor.Funcs
		stale bool
		want  courier.PreemptionGatesState
	}{
		"the worker's Kueue lists the gate": {funcs: answers, want: courier.PreemptionGatesEnabled},
		"no answer within the wait":         {want: courier.PreemptionGatesDisabled},
		"a probe left by an earlier Kueue that took gates does not answer for this one": {
			stale: true, want: courier.PreemptionGatesDisabled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&kueue.Workload{}).WithInterceptorFuncs(tc.funcs)
			if tc.stale {
				left := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "fence", Name: gateProbeName("courier", "w1")},
					Status: kueue.WorkloadStatus{PreemptionGates: listed}}
				b = b.WithObjects(left)
			}
			c := b.Build()
			got, err := probeGates(context.Background(), c, c, "fence", "courier", "w1", time.Second)
			if err != nil {
				t.Fatalf("probeGates: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("probeGates() (-want +got):\n%s", diff)
			}
			left := &kueue.WorkloadList{}
			if err := c.List(context.Background(), left); err != nil {
				t.Fatal(err)
			}
			if len(left.Items) != 0 {
				t.Errorf("probes left on the worker: %d, want none", len(left.Items))
			}
		})
	}
}
