package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/workload"

	"github.com/courierdev/courier/pkg/adapter"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

const jobEndedMsg = "The job's status on the manager shows its end; the workload is not dispatched again."

// The rows of Workloads that finished, ended on the manager, or come back
// after an eviction.
func TestPlanEnds(t *testing.T) {
	earlier := func() *kueuetesting.WorkloadWrapper { return local().Evicted("Preempted", 1) }
	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"finished by Courier, which said so: the copies go": {
			o: Observed{Workload: local().ClusterName("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check:     kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateReady, Message: `The workload finished on worker "a".`},
				Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, Workload: copyOf().Obj()}, "b": {Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a", "b"}, QuietRemoval: true},
		},
		"finished by the manager's Kueue from the mirrored final status: the copies go, without an event": {
			o: Observed{Workload: local().ClusterName("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, Workload: copyOf().Obj()}, "b": {Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a", "b"}, QuietRemoval: true},
		},
		"finished by the manager's Kueue before the final status arrived: mirror it, then the copies go": {
			o: Observed{Workload: local().ClusterName("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}}},
			want: Plan{FinalSync: "a", Delete: []string{"a"}, QuietRemoval: true},
		},
		"finished by the manager's Kueue, the placed worker's copies gone already: the others go, without an event": {
			o: Observed{Workload: local().ClusterName("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"b": {Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"b"}, QuietRemoval: true},
		},
		"finished before the check turned Ready: the check is not left Pending": {
			o: Observed{Workload: local().Nominated("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check: pendingCheck, Health: connected},
			want: Plan{Status: &StatusChange{State: kueue.CheckStateReady, Message: "The workload finished."}, QuietRemoval: true},
		},
		// A worker counted lost comes back with a copy that ran to its end;
		// its final status reaches the manager's job, and a pass before
		// Kueue finishes the Workload must not dispatch it again.
		"the manager's job ended, the Workload not finished yet: finished with the job's outcome, not dispatched again": {
			o: Observed{Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected, Now: now,
				JobEnd:  adapter.Outcome{Finished: true, Message: "Job completed"},
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}, "b": {Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a", "b"},
				Status: &StatusChange{State: kueue.CheckStateReady, Message: jobEndedMsg,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Job completed"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: jobEndedMsg + " Job completed"}}},
		},
		"the manager's job failed, the Workload placed on a worker whose copy runs: the run stops, finished as failed": {
			o: Observed{Workload: local().ClusterName("b").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "b"}, Health: connected,
				JobEnd:  adapter.Outcome{Finished: true, Failed: true},
				Remotes: map[string]Remote{"b": {HasJob: true, Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"b"},
				Status: &StatusChange{State: kueue.CheckStateReady, Message: jobEndedMsg, ClusterName: ptr.To("b"),
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Failed", Message: "The job ended."}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: jobEndedMsg + " The job ended."}}},
		},
		"the manager's job ended from the placed worker's copy, the manager's Kueue silent for the grace: finished there as usual, with no event": {
			o: Observed{Now: t0.Add(grace), Workload: local().ClusterName("a").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				JobEnd: adapter.Outcome{Finished: true},
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, FinalMirroredAt: t0, JobOutcome: adapter.Outcome{Finished: true},
					Workload: copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}}},
		},
		"the manager's job ended, its Workload evicted meanwhile: the copies go, nothing is dispatched": {
			o: Observed{Workload: local().Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "AdmissionCheck", t0).Obj(), Check: pendingCheck,
				JobEnd: adapter.Outcome{Finished: true}, Health: connected, Remotes: map[string]Remote{"a": {HasJob: true, JobOutcome: adapter.Outcome{Finished: true}}}},
			want: Plan{Delete: []string{"a"}, ClearJobActivity: true},
		},
		"evicted on the manager: every copy goes, the job's activity is cleared": {
			o: Observed{Workload: local().ClusterName("a").Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Preempted", t0).Obj(),
				Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a"}, ClearJobActivity: true, Status: &StatusChange{State: kueue.CheckStateReady, Message: readyMsg}},
		},
		"evicted, the copies gone: the placement is cleared": {
			o: Observed{Workload: local().Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Preempted", t0).Obj(),
				Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected},
			want: Plan{ClearJobActivity: true, ClearRecord: true},
		},
		"evicted while its worker is out of reach: the activity is cleared, the placement kept": {
			o: Observed{Workload: local().Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "AdmissionCheck", t0).Obj(),
				Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: time.Hour, Now: now,
				Health: map[string]Health{"a": {LostSince: at(now.Add(-time.Minute))}}},
			want: Plan{ClearJobActivity: true},
		},
		"deactivated: copies go": {
			o: Observed{Workload: local().Nominated("a").Active(false).Obj(), Check: pendingCheck, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a"}, ClearJobActivity: true, Status: &StatusChange{State: kueue.CheckStatePending}},
		},
		"the job is gone from the manager: copies go": {
			o: Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, JobMissing: true, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a"}, Status: &StatusChange{State: kueue.CheckStateReady, Message: readyMsg}},
		},
		"admitted again, the earlier admission's copies still on their worker: they go first": {
			o: Observed{Workload: earlier().Nominated("a").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1,
				Candidates: both, Health: connected, Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: `Removing the copies an earlier admission left on worker "a" before dispatching again.`}},
		},
		"admitted again, the earlier copies gone: the placement is cleared and the workload nominated": {
			o: Observed{Workload: earlier().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Candidates: both, Health: connected},
			want: Plan{
				ClearRecord: true,
				Create:      []string{"a", "b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a", "b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated a, b (best 2 of 2)."},
			},
		},
		"admitted again while the earlier worker is out of reach: nothing is dispatched until it is back or lost": {
			o: Observed{Workload: earlier().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Candidates: []Candidate{{Name: "b"}},
				WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {LostSince: at(now.Add(-5 * time.Minute))}, "b": {Connected: true}}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStatePending,
					Message: `Worker "a" held this workload before it was evicted and is out of reach; it may still run the job, so nothing is dispatched until it is back or counts as lost.`},
				Events: []Event{{Type: "Warning", Reason: "WaitingForWorker",
					Message: `Worker "a" held this workload before it was evicted and is out of reach; it may still run the job, so nothing is dispatched until it is back or counts as lost.`}},
				RequeueAfter: 10 * time.Minute,
			},
		},
		"admitted again after the earlier worker was lost: dispatched elsewhere": {
			o: Observed{Workload: earlier().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Candidates: []Candidate{{Name: "b"}},
				WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {LostSince: at(t0)}, "b": {Connected: true}}},
			want: Plan{
				ClearRecord: true,
				Create:      []string{"b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 1)."},
			},
		},
		"admitted again after the earlier worker's WorkerCluster went: dispatched elsewhere": {
			o: Observed{Workload: earlier().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Candidates: []Candidate{{Name: "b"}},
				WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {LostSince: &metav1.Time{}}, "b": {Connected: true}}},
			want: Plan{
				ClearRecord: true,
				Create:      []string{"b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 1)."},
			},
		},
	}
	runPlanCases(t, cases)
}
