package dispatch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestRemoteWorkload(t *testing.T) {
	cases := map[string]struct {
		local *kueue.Workload
		want  *kueue.Workload
	}{
		"metadata subset, spec, origin, manager UID and finalizer; no owner, status or job UID": {
			local: kueuetesting.MakeWorkload("wl", "ns").UID("uid-1").Queue("lq").
				Label("team", "a").Label("kueue.x-k8s.io/job-uid", "job-uid").
				Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "job-uid").
				ReserveQuota("cq").ClusterName("w1").Obj(),
			want: func() *kueue.Workload {
				wl := kueuetesting.MakeWorkload("wl", "ns").Queue("lq").Label("team", "a").Label("courier.dev/origin", "org").Obj()
				wl.Annotations = map[string]string{"courier.dev/manager-workload-uid": "uid-1"}
				wl.Finalizers = []string{"courier.dev/dispatcher"}
				return wl
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := remoteWorkload(tc.local, "org")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("remoteWorkload() mismatch (-want +got):\n%s", diff)
			}
			if !isCopyOf(got, tc.local) {
				t.Error("isCopyOf(copy, local) = false")
			}
			other := tc.local.DeepCopy()
			other.UID = "uid-2"
			if isCopyOf(got, other) {
				t.Error("a copy of an earlier Workload must not count as a copy of a new one")
			}
			if _, ok := tc.local.Labels["courier.dev/origin"]; ok {
				t.Error("remoteWorkload() modified its input")
			}
		})
	}
}
