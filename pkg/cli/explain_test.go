package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// trainJobTarget is a TrainJob on the manager and its Workload, which asks
// for one pod of one CPU.
func trainJobTarget(wl *kueue.Workload) *target {
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("trainer.kubeflow.org/v1alpha1")
	job.SetKind("TrainJob")
	job.SetName("tj")
	job.SetNamespace("ns")
	return &target{ref: JobRef{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: "ns", Name: "tj"}, job: job, workload: wl}
}

func cpus(name, nominal, usage, pending string) *couriertesting.WorkerClusterWrapper {
	return couriertesting.MakeWorkerCluster(name).Active().Capacity("default", "cpu", nominal, usage, pending)
}

func TestExplainWorkers(t *testing.T) {
	wl := kueuetesting.MakeWorkload("trainjob-tj", "ns").Queue("lq").ReserveQuota("cq").Nominated("roomy", "full").Obj()
	cases := map[string]struct {
		policy  courier.DispatchPolicySpec
		workers []*courier.WorkerCluster
		want    []WorkerVerdict
		wantErr string
	}{
		"each worker passed over says why": {
			policy: courier.DispatchPolicySpec{Clusters: []string{"roomy", "full", "tiny", "away", "gone", "deleted", "no-trainer"}},
			workers: []*courier.WorkerCluster{
				cpus("roomy", "4", "1", "0").Obj(),
				cpus("full", "2", "1", "1").Obj(),
				cpus("tiny", "500m", "0", "0").Obj(),
				couriertesting.MakeWorkerCluster("away").Condition(courier.WorkerClusterActive, metav1.ConditionFalse, courier.ReasonUnreachable, "").Obj(),
				cpus("deleted", "4", "0", "0").Deleting(now).Obj(),
				cpus("no-trainer", "4", "0", "0").UnavailableKinds("TrainJob.v1alpha1.trainer.kubeflow.org").Obj(),
			},
			want: []WorkerVerdict{
				{Name: "roomy", Eligible: true, RoomNow: true, Nominated: true},
				{Name: "full", Eligible: true, Nominated: true, Reason: "no room now: cpu: needs 1, has free 0", Preemption: "may preempt for the job"},
				{Name: "away", Reason: "not Active (Unreachable)"},
				{Name: "deleted", Reason: "its WorkerCluster is being deleted"},
				{Name: "gone", Reason: "no such WorkerCluster"},
				{Name: "no-trainer", Reason: "does not serve TrainJob.v1alpha1.trainer.kubeflow.org"},
				{Name: "tiny", Reason: "cpu: needs 1, can ever have 0.5"},
			},
		},
		"the policy's filter and label selector": {
			policy: courier.DispatchPolicySpec{
				ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
				Filter:          `cluster.labels["zone"] == "west"`,
			},
			workers: []*courier.WorkerCluster{
				cpus("west", "4", "0", "0").Label("pool", "a").Label("zone", "west").Obj(),
				cpus("east", "4", "0", "0").Label("pool", "a").Label("zone", "east").Obj(),
				cpus("elsewhere", "4", "0", "0").Label("pool", "b").Label("zone", "west").Obj(),
			},
			want: []WorkerVerdict{
				{Name: "west", Eligible: true, RoomNow: true},
				{Name: "east", Reason: "filtered out by the policy's filter"},
			},
		},
		"unknown capacity is eligible with room": {
			policy:  courier.DispatchPolicySpec{Clusters: []string{"new"}},
			workers: []*courier.WorkerCluster{couriertesting.MakeWorkerCluster("new").Active().Obj()},
			want:    []WorkerVerdict{{Name: "new", Eligible: true, RoomNow: true}},
		},
		"an invalid filter": {
			policy:  courier.DispatchPolicySpec{Clusters: []string{"a"}, Filter: "cluster.name =="},
			wantErr: "DispatchPolicy p is not valid: filter: ",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var workers []courier.WorkerCluster
			for _, w := range tc.workers {
				workers = append(workers, *w)
			}
			policy := &courier.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.policy}
			in, err := explainInputOf(wl, trainJobTarget(wl), policy, workers, now)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := explainWorkers(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWhy(t *testing.T) {
	pending := &CheckStatus{Name: "courier", State: string(kueue.CheckStatePending)}
	reserved := func() *kueuetesting.WorkloadWrapper { return kueuetesting.MakeWorkload("w", "ns").ReserveQuota("cq") }
	cases := map[string]struct {
		wl       *kueue.Workload
		check    *CheckStatus
		loc      Location
		workers  []WorkerVerdict
		decision placement.Decision
		want     string
	}{
		"dispatched": {
			wl: reserved().Obj(), check: &CheckStatus{Name: "courier", State: string(kueue.CheckStateReady)},
			loc:  Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
			want: "Not waiting: Placed on w1.",
		},
		"no quota on the manager": {
			wl: kueuetesting.MakeWorkload("w", "ns").Obj(), check: pending,
			want: "Waiting for quota on the manager: Kueue has not reserved it in the ClusterQueue yet, and Courier acts only after it has.",
		},
		"another check first": {
			wl: reserved().Check("provisioning", kueue.CheckStatePending, "").Obj(), check: pending,
			want: "Waiting for the other admission checks to be Ready first: provisioning.",
		},
		"no room anywhere": {
			wl: reserved().Obj(), check: pending, loc: Location{Nominated: []string{"w1"}},
			workers: []WorkerVerdict{{Name: "w1", Eligible: true, Nominated: true}, {Name: "w2", Eligible: true}},
			want:    "No worker has room for the job now; it waits until one does (eligible: w1, w2).",
		},
		"waiting on a nominated worker": {
			wl: reserved().Obj(), check: pending, loc: Location{Nominated: []string{"w1"}},
			workers: []WorkerVerdict{{Name: "w1", Eligible: true, RoomNow: true, Nominated: true}},
			want:    "Waiting for the Kueue of a nominated worker to admit it: w1.",
		},
		"none eligible": {
			wl: reserved().Obj(), check: pending,
			workers: []WorkerVerdict{{Name: "w1", Reason: "not connected"}},
			want:    "No worker is eligible; each one's reason is below.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := why(tc.wl, tc.check, tc.loc, tc.workers, tc.decision)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("why (-want +got):\n%s", diff)
			}
		})
	}
}
