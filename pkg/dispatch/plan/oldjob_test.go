package plan

import (
	"testing"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/workload"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

// A deleted job copy whose pods may still run: a worker whose controllers
// died takes Courier's delete, but never collects the old pods, which
// would start beside the job dispatched elsewhere. A job copy counts until
// it has disappeared, which, deleted in the foreground, is after its pods.
func TestPlanWaitsForOldJobCopies(t *testing.T) {
	earlier := func() *kueuetesting.WorkloadWrapper { return local().Evicted("Preempted", 1) }
	waiting := `Waiting for worker "a" to delete an earlier copy of the job and its pods before dispatching again.`
	held := "TrainJob team-a/job has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold"
	heldAdvice := "; if no controller on the worker removes them, remove them there by hand."
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"the earlier admission's job copy is being deleted: the placement holds": {
			o: Observed{Workload: earlier().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1,
				Candidates: both, Health: connected, Remotes: map[string]Remote{"a": {OldJob: true}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: `Removing the copies an earlier admission left on worker "a" before dispatching again.`}},
		},
		"an old job copy on a connected worker: no winner elsewhere, the nomination is withdrawn": {
			o: Observed{Workload: local().Nominated("b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, Stale: true}, "b": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"a", "b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: waiting}},
		},
		"an old job copy a foreign finalizer holds: the wait names it, and what to do": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, Held: held}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: waiting + " " + held + heldAdvice}},
		},
		"the earlier admission's job copy a foreign finalizer holds: the wait names it": {
			o: Observed{Workload: earlier().Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1,
				Candidates: both, Health: connected, Remotes: map[string]Remote{"a": {OldJob: true, Held: held}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: `Removing the copies an earlier admission left on worker "a" before dispatching again. ` + held + heldAdvice}},
		},
		"already waiting: nothing to write, the copies are deleted again": {
			o: Observed{Workload: local().Obj(), Check: kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending, Message: waiting},
				Candidates: both, Health: connected, Remotes: map[string]Remote{"a": {OldJob: true}}},
			want: Plan{Delete: []string{"a"}},
		},
		"an old job copy on a worker out of reach is left to the lost-worker policy": {
			o: Observed{Workload: local().Nominated("b").Obj(), Check: pendingCheck, Candidates: both,
				Health:  map[string]Health{"a": {}, "b": {Connected: true}},
				Remotes: map[string]Remote{"a": {OldJob: true}, "b": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"a"}, Record: &workload.Placement{Cluster: "b"}, CreateJob: "b", Unreached: []string{"a"},
				Status: dispatched("b"), Events: []Event{dispatchedEvent("b")}},
		},
		// A lost worker came back after the job was placed on another and
		// before its copy was created there, with the earlier copy running.
		"placed elsewhere while a worker was out of reach, which came back holding an old job copy: the job waits": {
			o: Observed{Workload: local().Nominated("b").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "b"}, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true}, "b": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: waiting, Nominated: []string{"b"}}},
		},
		"placed elsewhere, the old job copy back in reach, already waiting: its delete again, nothing to write": {
			o: Observed{Workload: local().Nominated("b").Obj(), Check: kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending, Message: waiting},
				Placement: &workload.Placement{Cluster: "b"}, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true}, "b": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"a"}},
		},
		"placed, its job created, an old job copy elsewhere: the job runs on and the old copy goes": {
			o: Observed{Workload: local().Nominated("b").ClusterName("b").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "b"}, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true}, "b": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobMirrored: true}}},
			want: Plan{Delete: []string{"a"}, Status: dispatched("b")},
		},
		"the placed worker's job copy is being deleted: Retry, and dispatch again once it is gone": {
			o: Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, Workload: copyOf().Admit(t0).Obj()}}},
			want: moved("CopyGone", `The job's copy on worker "a" is being deleted; dispatching the workload again once it is gone.`),
		},
		"a copy someone else deletes still mirrors how the job ended": {
			o: Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, HasJob: true, Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{SyncJob: "a"},
		},
	})
}

// A TrainJob copy goes in the background (Trainer remakes the JobSet of a
// TrainJob being deleted), so it may be gone while its JobSet and pods run
// on, on a worker whose controllers are down: the JobSet counts as the old
// job until it is gone, and Courier looks again for it, since no informer
// sees it go.
func TestPlanWaitsForRemnants(t *testing.T) {
	waiting := `Waiting for worker "a" to delete an earlier copy of the job and its pods before dispatching again.`
	forbidden := `Waiting for worker "a" to delete what ran an earlier copy of the job before dispatching again: ` +
		`Courier may not read jobsets there to tell; grant get on jobsets.jobset.x-k8s.io (config/worker/rbac.yaml).`
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"the deleted copy's JobSet is still there: wait, and look again": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, Remnant: true}}},
			want: Plan{Delete: []string{"a"}, RequeueAfter: remnantRecheck,
				Status: &StatusChange{State: kueue.CheckStatePending, Message: waiting}},
		},
		"the deleted copy's JobSet is held by a foreign finalizer: wait, naming it": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, Remnant: true,
					Held: "JobSet team-a/job has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold"}}},
			want: Plan{Delete: []string{"a"}, RequeueAfter: remnantRecheck,
				Status: &StatusChange{State: kueue.CheckStatePending, Message: waiting +
					" JobSet team-a/job has been deleting since 2026-11-26T04:00:00Z, held by the finalizers example.com/hold;" +
					" if no controller on the worker removes them, remove them there by hand."}},
		},
		"Courier may not read JobSets there: wait, saying how to fix it": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {OldJob: true, Remnant: true,
					RemnantUnknown: "Courier may not read jobsets there to tell; grant get on jobsets.jobset.x-k8s.io (config/worker/rbac.yaml)"}}},
			want: Plan{Delete: []string{"a"}, RequeueAfter: remnantRecheck,
				Status: &StatusChange{State: kueue.CheckStatePending, Message: forbidden}},
		},
		"the earlier admission's placement holds while its JobSet is there": {
			o: Observed{Workload: local().Evicted("Preempted", 1).Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Evictions: 1,
				Candidates: both, Health: connected, Remotes: map[string]Remote{"a": {OldJob: true, Remnant: true}}},
			want: Plan{Delete: []string{"a"}, RequeueAfter: remnantRecheck,
				Status: &StatusChange{State: kueue.CheckStatePending, Message: `Removing the copies an earlier admission left on worker "a" before dispatching again.`}},
		},
	})
}
