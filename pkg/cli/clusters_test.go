package cli

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestSummarizeClusters(t *testing.T) {
	placed := func(name, cluster string) *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload(name, "ns").ReserveQuota("cq").Annotation(courier.PlacementAnnotation, `{"cluster":"`+cluster+`","evictions":0}`)
	}
	workers := []courier.WorkerCluster{
		*couriertesting.MakeWorkerCluster("w1").Active().CapacitySummary("cpu 3/8").Obj(),
		*couriertesting.MakeWorkerCluster("w2").Condition(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable, "Unreachable.").
			Condition(courier.WorkerClusterDraining, metav1.ConditionTrue, "WorkloadsPlaced", "").Obj(),
		*couriertesting.MakeWorkerCluster("w3").Obj(),
	}
	workloads := []kueue.Workload{
		*placed("a", "w1").Obj(),
		*placed("b", "w1").Obj(),
		*placed("done", "w1").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", time.Time{}).Obj(),
		*placed("c", "w2").Obj(),
		*kueuetesting.MakeWorkload("waiting", "ns").ReserveQuota("cq").Nominated("w1", "w2").Obj(),
		*placed("evicted", "w2").Evicted("Preempted", 1).Nominated("w1").Obj(),
	}
	got := summarizeClusters(workers, workloads)
	want := &ClustersReport{Clusters: []ClusterSummary{
		{Name: "w1", Active: "True", Reason: courier.ReasonConnected, Message: "Connected.", Capacity: "cpu 3/8", Jobs: JobCounts{Placed: 2, Waiting: 2}},
		{Name: "w2", Active: "False", Reason: courier.ReasonUnreachable, Message: "Unreachable.", Draining: true, Jobs: JobCounts{Placed: 1, Waiting: 1}},
		{Name: "w3", Active: "Unknown"},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ClusterSummary{}, "Conditions")); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}
