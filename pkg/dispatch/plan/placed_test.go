package plan

import (
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// A copy deleted on the worker behind Courier's back: the worker's Kueue
// finishes its Workload with OwnerNotFound, which is not the job's end; were
// it mirrored, the manager's job would stay Running under a Finished
// Workload.
func TestPlanPlacedCopyDeletedOnWorker(t *testing.T) {
	placed := local().ClusterName("a").Obj()
	ownerGone := copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonOwnerNotFound, t0).Obj()
	succeeded := copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, t0).Obj()
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"the job copy is gone and the worker ended its Workload: Retry": {
			o: Observed{Workload: placed, Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: ownerGone}}},
			want: moved("OwnerNotFound", `The job's copy on worker "a" was deleted before it finished (OwnerNotFound); dispatching the workload again.`),
		},
		"the job copy is being deleted and the worker ended its Workload: Retry": {
			o: Observed{Workload: placed, Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, Workload: ownerGone}}},
			want: moved("OwnerNotFound", `The job's copy on worker "a" was deleted before it finished (OwnerNotFound); dispatching the workload again.`),
		},
		// The same view arises when the job copy's informer lags the
		// Workload's: the worker is asked for the final status either way.
		"a job that succeeded and was then deleted (or not yet cached) finishes after a final read": {
			o: Observed{Workload: placed, Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: succeeded}}},
			want: Plan{
				FinalSync: "a",
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
	})
}

// The final status comes from the informer's job copy when that already
// shows the job's end, and from a read of the worker otherwise.
func TestPlanFinalSyncSource(t *testing.T) {
	placed := local().ClusterName("a").Obj()
	succeeded := copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, t0).Obj()
	cached := &unstructured.Unstructured{}
	cached.SetName("cached")
	finish := func(from *unstructured.Unstructured) Plan {
		return Plan{
			FinalSync: "a", FinalFrom: from,
			Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
				Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
			Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
		}
	}
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"the cached copy shows the end: mirrored from it": {
			o: Observed{Workload: placed, Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: succeeded, HasJob: true, JobMirrored: true, JobOutcome: adapter.Outcome{Finished: true}, JobCopy: cached}}},
			// The manager's Kueue finishes the Workload from the status
			// mirrored; Courier looks again after the grace.
			want: Plan{FinalSync: "a", FinalFrom: cached, RequeueAfter: grace},
		},
		"the cached copy still runs: the worker is read": {
			o: Observed{Workload: placed, Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: succeeded, HasJob: true, JobMirrored: true, JobCopy: cached}}},
			want: finish(nil),
		},
	})
}

// With no grace configured, Courier finishes the Workload in the pass that
// mirrors the job's end, with no event: the manager's Kueue would have.
// It does so whether or not anything waits for the quota.
func TestNoKueueFinishGrace(t *testing.T) {
	o := Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, HasCheck: true, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
		NothingWaitsForQuota: true,
		Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, JobOutcome: adapter.Outcome{Finished: true, Message: "done"},
			Workload: copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}}
	want := Plan{
		FinalSync: "a",
		Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
			Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
	}
	if diff := gocmp.Diff(want, decide(o), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("decide() mismatch (-want +got):\n%s", diff)
	}
}

// While nothing waits for its quota, a Workload whose job ended is left to
// the manager's Kueue however late, and looked at again only after
// finishBackstop: a ClusterQueue that comes to want the quota queues it,
// and a look per grace would cost a saturated Kueue's backlog a pass per
// ended job per grace.
func TestFinishLeftToKueue(t *testing.T) {
	left := Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
		Now: now, NothingWaitsForQuota: true,
		Remotes: map[string]Remote{"a": {HasJob: true, FinalMirroredAt: now.Add(-grace), JobOutcome: adapter.Outcome{Finished: true, Message: "done"}}}}
	finished := Plan{
		Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
			Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "done"}},
	}
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"the grace ran out: looked at again after the backstop": {
			o:    left,
			want: Plan{RequeueAfter: finishBackstop},
		},
		"the grace ran out an hour ago: looked at again after the backstop": {
			o: func() Observed {
				o := left
				o.Remotes = map[string]Remote{"a": {HasJob: true, FinalMirroredAt: now.Add(-time.Hour), JobOutcome: adapter.Outcome{Finished: true, Message: "done"}}}
				return o
			}(),
			want: Plan{RequeueAfter: finishBackstop},
		},
		"a grace longer than the backstop: looked at again after a grace": {
			o: func() Observed {
				o := left
				o.KueueFinishGrace = 10 * time.Minute
				o.Remotes = map[string]Remote{"a": {HasJob: true, FinalMirroredAt: now.Add(-10 * time.Minute), JobOutcome: adapter.Outcome{Finished: true, Message: "done"}}}
				return o
			}(),
			want: Plan{RequeueAfter: 10 * time.Minute},
		},
		"half the grace left: looked at again when it runs out": {
			o: func() Observed {
				o := left
				o.Remotes = map[string]Remote{"a": {HasJob: true, FinalMirroredAt: now.Add(-grace / 2), JobOutcome: adapter.Outcome{Finished: true, Message: "done"}}}
				return o
			}(),
			want: Plan{RequeueAfter: grace / 2},
		},
		"the grace ran out and a Workload waits for the quota: Finished written": {
			o: func() Observed {
				o := left
				o.NothingWaitsForQuota = false
				return o
			}(),
			want: finished,
		},
	})
}
