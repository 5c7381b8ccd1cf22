package placementdecision

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestDecision(t *testing.T) {
	evicted := func(wl *kueue.Workload) *kueue.Workload {
		wl.Status.SchedulingStats = &kueue.SchedulingStats{Evictions: []kueue.WorkloadSchedulingStatsEviction{{Reason: "Preempted", Count: 1}}}
		return wl
	}
	cases := map[string]struct {
		wl     *kueue.Workload
		p      *workload.Placement
		wc     *courier.WorkerCluster
		labels map[string]string
		want   []inventory.ClusterDecision
	}{
		"a worker of a ClusterProfile": {
			p:      &workload.Placement{Cluster: "gpu-1"},
			wc:     couriertesting.MakeWorkerCluster("gpu-1").ClusterProfile("fleet", "gke-gpu-1").Obj(),
			labels: map[string]string{WorkerClusterLabel: "gpu-1"},
			want: []inventory.ClusterDecision{{ClusterProfileRef: inventory.ClusterProfileReference{Namespace: "fleet", Name: "gke-gpu-1"},
				Reason: "Placed by Courier on WorkerCluster gpu-1, whose Kueue admitted the workload."}},
		},
		"a worker of a kubeconfig Secret": {
			p:      &workload.Placement{Cluster: "gpu-2"},
			wc:     couriertesting.MakeWorkerCluster("gpu-2").Obj(),
			labels: map[string]string{WorkerClusterLabel: "gpu-2"},
			want: []inventory.ClusterDecision{{ClusterProfileRef: inventory.ClusterProfileReference{Name: "gpu-2"},
				Reason: "Placed by Courier on WorkerCluster gpu-2, whose Kueue admitted the workload; Courier reaches it through a kubeconfig Secret, not a ClusterProfile, so the reference names the WorkerCluster."}},
		},
		"a placement of an earlier admission": {
			wl:   evicted(kueuetesting.MakeWorkload("wl", "team-a").Obj()),
			p:    &workload.Placement{Cluster: "gpu-1"},
			wc:   couriertesting.MakeWorkerCluster("gpu-1").Obj(),
			want: []inventory.ClusterDecision{},
		},
		"a placement of this admission after an eviction": {
			wl:     evicted(kueuetesting.MakeWorkload("wl", "team-a").Obj()),
			p:      &workload.Placement{Cluster: "gpu-1", Evictions: 1},
			labels: map[string]string{WorkerClusterLabel: "gpu-1"},
			want: []inventory.ClusterDecision{{ClusterProfileRef: inventory.ClusterProfileReference{Name: "gpu-1"},
				Reason: "Placed by Courier on WorkerCluster gpu-1, whose Kueue admitted the workload; Courier reaches it through a kubeconfig Secret, not a ClusterProfile, so the reference names the WorkerCluster."}},
		},
		"no placement": {want: []inventory.ClusterDecision{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := tc.wl
			if wl == nil {
				wl = kueuetesting.MakeWorkload("wl", "team-a").Obj()
			}
			wl.UID = "uid-1"
			got := Decision(wl, tc.p, tc.wc)
			if got.Name != "wl" || got.Namespace != "team-a" || got.SchedulerName != courier.ControllerName {
				t.Errorf("PlacementDecision %s/%s by %q, want team-a/wl by %s", got.Namespace, got.Name, got.SchedulerName, courier.ControllerName)
			}
			labels := map[string]string{inventory.PlacementKeyLabel: "uid-1"}
			for k, v := range tc.labels {
				labels[k] = v
			}
			if diff := cmp.Diff(labels, got.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got.Decisions); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			if owner := metav1.GetControllerOf(got); owner == nil || owner.Kind != "Workload" || owner.UID != "uid-1" {
				t.Errorf("owner %+v, want the Workload", owner)
			}
		})
	}
}
