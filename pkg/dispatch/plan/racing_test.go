package plan

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// A manager-side eviction, preemption or deactivation that races the
// job's end on its worker: the job completed there, its final status not
// mirrored yet. The end stands: the status is mirrored and the Workload
// finished with the job's outcome, instead of its copies going unread and
// the job running again from scratch.
func TestPlanManagerEndRacingTheJobsEnd(t *testing.T) {
	done := &adapter.Outcome{Finished: true, Message: "Job finished successfully."}
	ended := &unstructured.Unstructured{}
	finishedOnA := func(checkState kueue.CheckState) Plan {
		return Plan{FinalSync: "a", FinalFrom: ended,
			Status: &StatusChange{State: checkState, Message: `The workload finished on worker "a".`, ClusterName: ptr.To("a"),
				Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully."}},
			Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Job finished successfully.`}}}
	}
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"preempted on the manager after the job ended on its worker: finished, not run again": {
			o: Observed{Workload: local().Evicted(kueue.WorkloadEvictedByPreemption, 1).Obj(), Check: pendingCheck, HasCheck: true,
				Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Health: connected,
				Remotes: map[string]Remote{"a": {Stale: true, OldJob: true, EarlierEnd: done, JobCopy: ended}}},
			want: finishedOnA(kueue.CheckStateReady),
		},
		"admitted again after an eviction that raced the job's end: finished, not dispatched again": {
			o: Observed{Workload: local().Evicted(kueue.WorkloadEvictedByPreemption, 1).Obj(), Check: pendingCheck, HasCheck: true,
				Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Health: connected, Candidates: both,
				Remotes: map[string]Remote{"a": {Stale: true, OldJob: true, EarlierEnd: done, JobCopy: ended}}},
			want: finishedOnA(kueue.CheckStateReady),
		},
		"deactivated on the manager as its job ended, the placement still live: finished there": {
			o: Observed{Workload: local().ClusterName("a").Active(false).Obj(), Check: readyCheck, HasCheck: true,
				Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobCopy: ended, JobOutcome: *done}}},
			want: Plan{FinalSync: "a", FinalFrom: ended,
				Status: &StatusChange{State: kueue.CheckStateReady, Message: `The workload finished on worker "a".`, ClusterName: ptr.To("a"),
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully."}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Job finished successfully.`}}},
		},
		"its final status on the manager already: only the Workload finishes": {
			o: Observed{Workload: local().Evicted(kueue.WorkloadEvictedByPreemption, 1).Obj(), Check: pendingCheck, HasCheck: true,
				Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Health: connected,
				Remotes: map[string]Remote{"a": {Stale: true, OldJob: true, EarlierEnd: done, JobCopy: ended, FinalMirroredAt: t0}}},
			want: func() Plan { p := finishedOnA(kueue.CheckStateReady); p.FinalSync, p.FinalFrom = "", nil; return p }(),
		},
		"admitted again while the earlier copy still runs: it goes first, as before": {
			o: Observed{Workload: local().Evicted(kueue.WorkloadEvictedByPreemption, 1).Obj(), Check: pendingCheck, HasCheck: true,
				Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, Health: connected,
				Remotes: map[string]Remote{"a": {Stale: true, OldJob: true}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: `Removing the copies an earlier admission left on worker "a" before dispatching again.`}},
		},
	})
}
