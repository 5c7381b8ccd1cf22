package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestSummarizeJobs(t *testing.T) {
	checks := []kueue.AdmissionCheck{
		{ObjectMeta: metav1.ObjectMeta{Name: "courier"}, Spec: kueue.AdmissionCheckSpec{ControllerName: courier.ControllerName}},
		{ObjectMeta: metav1.ObjectMeta{Name: "provisioning"}, Spec: kueue.AdmissionCheckSpec{ControllerName: "kueue.x-k8s.io/provisioning-request"}},
	}
	workloads := []kueue.Workload{
		*kueuetesting.MakeWorkload("trainjob-b", "team-b").Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "b", "uid-b").
			ReserveQuota("cq").Check("courier", kueue.CheckStatePending, "Nominated w1.").Nominated("w1").Obj(),
		*kueuetesting.MakeWorkload("job-a", "team-a").Owner("batch/v1", "Job", "a", "uid-a").
			ReserveQuota("cq").Check("courier", kueue.CheckStateReady, "Dispatched to worker w2.").ClusterName("w2").Obj(),
		*kueuetesting.MakeWorkload("other", "team-a").Owner("batch/v1", "Job", "other", "uid-o").
			Check("provisioning", kueue.CheckStatePending, "").Obj(),
		*kueuetesting.MakeWorkload("by-hand", "team-a").Check("courier", kueue.CheckStatePending, "").Obj(),
	}
	got := summarizeJobs(workloads, checks)
	want := &JobsReport{Jobs: []JobSummary{
		{
			Job:      JobRef{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-a", Name: "a"},
			Workload: "job-a", WorkloadState: "QuotaReserved", Check: CheckStatus{Name: "courier", State: "Ready", Message: "Dispatched to worker w2."},
			Location: Location{Cluster: "w2", Live: true, Summary: "Placed on w2."},
		},
		{
			Job:      JobRef{APIVersion: "kueue.x-k8s.io/v1beta2", Kind: "Workload", Namespace: "team-a", Name: "by-hand"},
			Workload: "by-hand", WorkloadState: "Pending", Check: CheckStatus{Name: "courier", State: "Pending"},
			Location: Location{Summary: "Not sent to any worker yet."},
		},
		{
			Job:      JobRef{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: "team-b", Name: "b"},
			Workload: "trainjob-b", WorkloadState: "QuotaReserved", Check: CheckStatus{Name: "courier", State: "Pending", Message: "Nominated w1."},
			Location: Location{Nominated: []string{"w1"}, Summary: "Waiting for a worker's Kueue to admit it; copies on w1."},
		},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(CheckStatus{}, "LastTransitionTime")); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}
