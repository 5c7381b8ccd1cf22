package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestLocate(t *testing.T) {
	wl := func() *kueuetesting.WorkloadWrapper { return kueuetesting.MakeWorkload("w", "ns").ReserveQuota("cq") }
	cases := map[string]struct {
		wl   *kueue.Workload
		want Location
	}{
		"placed": {
			wl:   wl().Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":1}`).Evicted("Preempted", 1).ClusterName("w1").Obj(),
			want: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
		},
		"placed before the last eviction": {
			wl: wl().Annotation(courier.PlacementAnnotation, `{"cluster":"w1","evictions":0}`).Evicted("Preempted", 1).Nominated("w2").Obj(),
			want: Location{Cluster: "w1", Nominated: []string{"w2"},
				Summary: "Was placed on w1 before its last eviction; its copies there go before it is dispatched again."},
		},
		"dispatched before placements were recorded": {
			wl:   wl().ClusterName("w1").Obj(),
			want: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
		},
		"waiting with copies": {
			wl:   wl().Nominated("w1", "w2").Obj(),
			want: Location{Nominated: []string{"w1", "w2"}, Summary: "Waiting for a worker's Kueue to admit it; copies on w1, w2."},
		},
		"not sent yet": {
			wl:   wl().Obj(),
			want: Location{Summary: "Not sent to any worker yet."},
		},
		"a record Courier did not write": {
			wl:   wl().Annotation(courier.PlacementAnnotation, "w1").Obj(),
			want: Location{Summary: `The annotation courier.dev/placement="w1" is not a placement Courier wrote; Courier ignores it.`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, locate(tc.wl)); diff != "" {
				t.Errorf("location (-want +got):\n%s", diff)
			}
		})
	}
}
