package plan

import (
	"cmp"
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

const check = "courier"

// grace is the KueueFinishGrace every case observes unless it sets its
// own.
const grace = configv1alpha1.DefaultKueueFinishGrace

var (
	t0  = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)

	both      = []Candidate{{Name: "a"}, {Name: "b"}}
	connected = map[string]Health{"a": {Connected: true}, "b": {Connected: true}}

	pendingCheck = kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending}
	readyMsg     = `Dispatched to worker "a", whose Kueue admitted the workload.`
	readyCheck   = kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateReady, Message: readyMsg}
	retryCheck   = kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateRetry}
)

func local() *kueuetesting.WorkloadWrapper {
	return kueuetesting.MakeWorkload("wl", "ns").UID("uid").ReserveQuota("cq")
}

func copyOf() *kueuetesting.WorkloadWrapper {
	return kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq")
}

func at(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

func dispatched(cluster string) *StatusChange {
	return &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To(cluster),
		Message: `Dispatched to worker "` + cluster + `", whose Kueue admitted the workload.`}
}

func dispatchedEvent(cluster string) Event {
	return Event{Type: "Normal", Reason: courier.EventDispatched, Message: `Dispatched to worker "` + cluster + `".`}
}

// moved is retry after a worker's eviction of the job on "a" for
// reason, which is recorded as a move.
func moved(reason, msg string) Plan { return withMove(retry("RemoteEvicted", msg), reason) }

// withMove is p with the move off "a" for reason recorded.
func withMove(p Plan, reason string) Plan {
	p.RecordMoves = []workload.Move{{Cluster: "a", Reason: reason}}
	p.JobEvents = []Event{{Type: "Warning", Reason: "RemoteEvicted", Message: p.Status.Message}}
	return p
}

// ignoreMoveTimes leaves out when a move happened, which is the pass's
// clock.
var ignoreMoveTimes = cmpopts.IgnoreFields(workload.Move{}, "At")

// retryRechecked is retry, looked at again after d whatever happens.
func retryRechecked(d time.Duration, reason, msg string) Plan {
	p := retry(reason, msg)
	p.Recheck = d
	return p
}

func retry(reason, msg string) Plan {
	return Plan{
		Status: &StatusChange{State: kueue.CheckStateRetry, Message: msg, ClusterName: ptr.To("a")},
		Events: []Event{{Type: "Warning", Reason: reason, Message: msg}},
	}
}

// The placed rows: a Workload placed on "a" for its current admission.
func TestPlanPlaced(t *testing.T) {
	placed := func() *kueuetesting.WorkloadWrapper { return local().ClusterName("a") }
	labelled := &adapter.Forwarding{Update: &unstructured.Unstructured{Object: map[string]any{"kind": "Job"}}, Forwarded: []string{"metadata.labels"}}
	running := Remote{Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobMirrored: true}
	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"running, its status mirrored: nothing to do": {
			o:    Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected, Remotes: map[string]Remote{"a": running}},
			want: Plan{},
		},
		"running, its status changed: mirror it": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}}},
			want: Plan{SyncJob: "a"},
		},
		"running, its status changed within statusMirrorDelay of the last mirror: mirrored once the delay is out": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, MirrorIn: 700 * time.Millisecond}}},
			want: Plan{RequeueAfter: 700 * time.Millisecond},
		},
		"recorded but the job is missing (the create failed): create it, then Ready": {
			o: Observed{Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{CreateJob: "a", Status: dispatched("a"), Events: []Event{dispatchedEvent("a")}},
		},
		"recorded on a, b admitted earlier: the job stays on a, b's copy goes": {
			o: Observed{Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected, Candidates: both,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0.Add(time.Second)).Obj(), HasJob: true}, "b": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"b"}, SyncJob: "a", Status: dispatched("a"), Events: []Event{dispatchedEvent("a")}},
		},
		"recorded on a, which is out of reach, b admitted: nothing goes to b": {
			o: Observed{Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Candidates: both,
				Health:  map[string]Health{"a": {}, "b": {Connected: true}},
				Remotes: map[string]Remote{"b": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Delete: []string{"b"}},
		},
		"dispatched before placements were recorded: clusterName is the placement": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}, "b": {Workload: copyOf().Obj(), HasJob: true}}},
			want: Plan{Delete: []string{"b"}, SyncJob: "a"},
		},
		"the worker finished it: final status first, then Finished with the worker's reason": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, Workload: copyOf().Admit(t0).
					Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				FinalSync: "a",
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
		"finished so fast the check was still Pending: final status, then Finished and Ready": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).
					Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				FinalSync: "a",
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
		"the worker found its job out of sync: Retry": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).
					Condition(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonOutOfSync, t0).Obj()}}},
			want: moved("OutOfSync", `Worker "a" found its job out of sync with the workload: OutOfSync; dispatching the workload again.`),
		},
		"the worker evicted it: Retry": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).
					Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Preempted", t0).Obj()}}},
			want: moved("Preempted", `Worker "a" evicted the workload (Preempted: Preempted); dispatching the workload again.`),
		},
		"the worker's fence stopped it while Courier was cut off, and the worker is back before the job moved: Retry once, the copy deleted": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).Active(false).
					Annotation(courier.FencedAnnotation, "2026-11-28T08:00:00Z").Obj()}}},
			want: moved("Fenced", `Worker "a"'s fence stopped the workload's copy at 2026-11-28T08:00:00Z, when Courier's heartbeat there had stopped; dispatching the workload again.`),
		},
		// The worker deactivates the Workload after its job ended but
		// before its Kueue finished the Workload.
		"the worker evicted it after the job ended: finished, not dispatched again": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, JobOutcome: adapter.Outcome{Finished: true, Message: "done"},
					Workload: copyOf().Admit(t0).Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Deactivated", t0).Obj()}}},
			// The job's end mirrored, the manager's Kueue finishes it.
			want: Plan{FinalSync: "a", RequeueAfter: grace},
		},
		"the job's end mirrored a moment ago: the manager's Kueue is given the rest of the grace": {
			o: Observed{Now: t0.Add(4 * time.Second), Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, FinalMirroredAt: t0, JobOutcome: adapter.Outcome{Finished: true, Message: "done"},
					Workload: copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{RequeueAfter: grace - 4*time.Second},
		},
		"the job's end mirrored, the manager's Workload deactivated meanwhile: Finished written at once": {
			o: Observed{Workload: placed().Active(false).Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, JobOutcome: adapter.Outcome{Finished: true, Message: "done"},
					Workload: copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				FinalSync: "a",
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
		"the worker refused the job before it ran, its copies removed: the placement goes, not through Kueue's requeue": {
			o: Observed{Now: now, Workload: local().Nominated("a").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				PassedOver: map[string]PassOver{"a": {Reason: "holds a TrainJob Courier did not create", Until: now.Add(5 * time.Minute)}}, Remotes: map[string]Remote{}},
			// Planned again when the pass-over ends.
			want: Plan{ClearRecord: true, Recheck: 5*time.Minute + time.Millisecond},
		},
		"the worker refused the job before it ran, its Workload copy still going: the placement goes": {
			o: Observed{Now: now, Workload: local().Nominated("a").Obj(), Check: pendingCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				PassedOver: map[string]PassOver{"a": {Reason: "refused the TrainJob", Until: now.Add(time.Minute)}}, Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Deleting(t0).Obj()}}},
			want: Plan{ClearRecord: true, Recheck: time.Minute + time.Millisecond},
		},
		"a refusal noted, but the check turned Ready: the job may have run, Retry": {
			o: Observed{Now: now, Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				PassedOver: map[string]PassOver{"a": {Reason: "refused the TrainJob", Until: now}}, Remotes: map[string]Remote{}},
			want: withMove(retryRechecked(time.Millisecond, "RemoteEvicted", `The workload's copy on worker "a" is gone; dispatching the workload again.`), "CopyGone"),
		},
		"the worker's copy vanished: Retry": {
			o:    Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected, Remotes: map[string]Remote{}},
			want: moved("CopyGone", `The workload's copy on worker "a" is gone; dispatching the workload again.`),
		},
		"the worker's Workload removed, the job copy says it completed, the manager's Kueue silent for the grace: finished, with no event": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Now:     t0.Add(grace),
				Remotes: map[string]Remote{"a": {HasJob: true, FinalMirroredAt: t0, JobOutcome: adapter.Outcome{Finished: true, Message: "done"}}}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "done"}},
			},
		},
		"the manager's Kueue silent for the grace, and nothing waits for the quota: left to Kueue, looked at again after the backstop": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Now: t0.Add(3 * grace), NothingWaitsForQuota: true,
				Remotes: map[string]Remote{"a": {HasJob: true, FinalMirroredAt: t0, JobOutcome: adapter.Outcome{Finished: true, Message: "done"}}}},
			want: Plan{RequeueAfter: finishBackstop},
		},
		"nothing waits for the quota, but the manager's Workload deactivated: Finished written at once": {
			o: Observed{Workload: placed().Active(false).Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				NothingWaitsForQuota: true,
				Remotes: map[string]Remote{"a": {HasJob: true, JobMirrored: true, FinalMirroredAt: t0, JobOutcome: adapter.Outcome{Finished: true, Message: "done"},
					Workload: copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
		"the worker's Workload removed, the job copy says it failed, the manager's Kueue silent for the grace: finished, Failed, with no event": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Now:     t0.Add(grace),
				Remotes: map[string]Remote{"a": {HasJob: true, FinalMirroredAt: t0, JobOutcome: adapter.Outcome{Finished: true, Failed: true, Message: "oom"}}}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Failed", Message: "oom"}},
			},
		},
		"the worker's Workload removed while the job runs: Retry": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true}}},
			want: moved("CopyGone", `The workload's copy on worker "a" is gone; dispatching the workload again.`),
		},
		"a finished copy being deleted (Kueue's retention) is finished, not lost": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).Deleting(t0).
					Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				FinalSync: "a",
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
		"the worker's copy is being deleted: Retry": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).Deleting(t0).Obj()}}},
			want: moved("CopyGone", `The workload's copy on worker "a" is being deleted; dispatching the workload again.`),
		},
		"worker unreachable within the timeout: wait for the rest of it": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {LostSince: at(now.Add(-10 * time.Minute)), LostReason: "WorkerLost", LostWhy: "has been unreachable"}}},
			want: Plan{RequeueAfter: 5 * time.Minute},
		},
		"worker unreachable past the timeout, counted from the first disconnect: Retry": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {LostSince: at(t0), LostReason: "WorkerLost", LostWhy: "has been unreachable since 2026-01-01T10:00:00Z"}}},
			want: retry("WorkerLost", `Worker "a" has been unreachable since 2026-01-01T10:00:00Z, for longer than workerLostTimeout (15m0s); dispatching the workload again.`),
		},
		"worker refusing Courier's credentials past the timeout, Active before: Retry with a reason of its own": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: time.Minute, Now: now,
				Health: map[string]Health{"a": {LostSince: at(t0), LostReason: "WorkerUnusable", LostWhy: "has refused Courier's connection (Forbidden) since 2026-01-01T10:00:00Z"}}},
			want: retry("WorkerUnusable", `Worker "a" has refused Courier's connection (Forbidden) since 2026-01-01T10:00:00Z, for longer than workerLostTimeout (1m0s); dispatching the workload again.`),
		},
		"worker connecting, not lost: wait": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: time.Minute, Now: now,
				Health: map[string]Health{"a": {}}},
			want: Plan{},
		},
		"WorkerCluster deleted, within the timeout: the job runs on and is mirrored": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health:  map[string]Health{"a": {Connected: true, LostSince: at(now.Add(-5 * time.Minute)), LostReason: "WorkerDraining"}},
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}}},
			want: Plan{SyncJob: "a", RequeueAfter: 10 * time.Minute},
		},
		"WorkerCluster deleted, past the timeout: Retry": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {Connected: true, LostSince: at(t0), LostReason: "WorkerDraining",
					LostWhy: "has been draining since its WorkerCluster was deleted at 2026-01-01T10:00:00Z"}},
				Remotes: map[string]Remote{"a": running}},
			want: retry("WorkerDraining", `Worker "a" has been draining since its WorkerCluster was deleted at 2026-01-01T10:00:00Z, for longer than workerLostTimeout (15m0s); dispatching the workload again.`),
		},
		"changed after dispatch in a way the worker refuses: reported, never stopped": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected, Rejection: "env is forbidden",
				Remotes: map[string]Remote{"a": running}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: readyMsg +
					" The job changed after dispatch in a way its worker would refuse; the running copy is kept as it was: env is forbidden"},
				Events: []Event{{Type: "Warning", Reason: "NotForwarded",
					Message: "The job changed after dispatch in a way its worker would refuse; the running copy is kept as it was: env is forbidden"}},
			},
		},
		"changed after dispatch, already reported: no write": {
			o: Observed{Workload: placed().Obj(), Placement: &workload.Placement{Cluster: "a"}, Health: connected, Rejection: "env is forbidden",
				Check: kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateReady, Message: readyMsg +
					" The job changed after dispatch in a way its worker would refuse; the running copy is kept as it was: env is forbidden"},
				Remotes: map[string]Remote{"a": running}},
			want: Plan{},
		},
		"running, the job changed on the manager: the change goes to the copy": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobMirrored: true, Forward: labelled}}},
			want: Plan{Forward: "a", Forwarding: labelled},
		},
		"running, a change the copy cannot take: reported on the job, nothing written": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobMirrored: true, Forward: &adapter.Forwarding{
					Refused: []adapter.Refusal{{Field: "spec.runtimePatches", Why: "it runs."}, {Field: "spec.x", Why: "edited on the worker by hand, and it runs.", Edited: true}}}}}},
			want: Plan{JobEvents: []Event{
				{Type: "Warning", Reason: courier.EventNotForwarded, Message: `Not forwarded to worker "a": spec.runtimePatches: it runs.`},
				{Type: "Warning", Reason: courier.EventRemoteEdited, Message: `The copy on worker "a" has spec.x: edited on the worker by hand, and it runs.`},
			}},
		},
		"running, its priority changed on the manager: the Workload copy gets it": {
			o: Observed{Workload: placed().Priority("high", 100).Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Priority("low", 1).Admit(t0).Obj(), HasJob: true, JobMirrored: true}}},
			want: Plan{ForwardPriority: "a"},
		},
		"its AdmissionCheck deleted: the job runs on and is reported on": {
			o: Observed{Workload: placed().Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				CheckMissing: "AdmissionCheck gone.", Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}}},
			want: Plan{
				SyncJob: "a",
				Status:  &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: readyMsg + " AdmissionCheck gone."},
				Events:  []Event{{Type: "Warning", Reason: "CheckMissing", Message: "AdmissionCheck gone."}},
			},
		},
		"its check removed from the Workload: finished all the same, the check left alone": {
			o: Observed{Workload: placed().Obj(), Placement: &workload.Placement{Cluster: "a"}, Health: connected, CheckMissing: "gone",
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}}},
			want: Plan{
				FinalSync: "a",
				Status: &StatusChange{ClusterName: ptr.To("a"),
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
	}
	runPlanCases(t, cases)
}

// The rows of Workloads not placed yet.
func TestPlanUnplaced(t *testing.T) {
	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"new workload: copies to every usable candidate, nominated": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected},
			want: Plan{
				Create: []string{"a", "b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a", "b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated a, b (best 2 of 2)."},
			},
		},
		"an unusable candidate is not nominated and its copy goes": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Health: connected,
				Candidates: []Candidate{{Name: "a"}, {Name: "b", Unusable: "does not serve TrainJob.v1alpha1.trainer.kubeflow.org"}},
				Remotes:    map[string]Remote{"a": {Workload: copyOf().Obj()}, "b": {Workload: copyOf().Obj()}},
			},
			want: Plan{
				Delete: []string{"b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated a (best of 2). Passed over: b: does not serve TrainJob.v1alpha1.trainer.kubeflow.org."},
				Events: []Event{{Type: "Normal", Reason: "Nominated", Message: "Copied the workload to a. Nominated a (best of 2). Passed over: b: does not serve TrainJob.v1alpha1.trainer.kubeflow.org."}},
			},
		},
		"no usable worker: Pending with the reasons": {
			o:    Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: []Candidate{{Name: "a", Unusable: "not connected"}}},
			want: Plan{Status: &StatusChange{State: kueue.CheckStatePending, Message: "No worker can take the workload now. No cluster is eligible. Passed over: a: not connected."}},
		},
		"waiting, nothing changed: no writes": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Candidates: both, Health: connected,
				Check:   kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending, Message: "Waiting for a nominated worker to admit the workload. Nominated a, b (best 2 of 2)."},
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}, "b": {Workload: copyOf().Obj()}},
			},
			want: Plan{},
		},
		"both admit: the first admitted wins, is recorded, gets the job; the other copy goes": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0.Add(time.Second)).Obj()}, "b": {Workload: copyOf().Admit(t0).Obj()}},
			},
			want: Plan{Delete: []string{"a"}, Record: &workload.Placement{Cluster: "b"}, CreateJob: "b", Status: dispatched("b"), Events: []Event{dispatchedEvent("b")}},
		},
		"admitted at the same time: ties go by name": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}, "b": {Workload: copyOf().Admit(t0).Obj()}},
			},
			want: Plan{Delete: []string{"b"}, Record: &workload.Placement{Cluster: "a"}, CreateJob: "a", Status: dispatched("a"), Events: []Event{dispatchedEvent("a")}},
		},
		"a worker that already holds the job wins over an earlier admission elsewhere": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}, "b": {Workload: copyOf().Admit(t0.Add(time.Second)).Obj(), HasJob: true}},
			},
			want: Plan{Delete: []string{"a"}, Record: &workload.Placement{Cluster: "b"}, Status: dispatched("b"), Events: []Event{dispatchedEvent("b")}},
		},
		"a copy being deleted cannot win": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Deleting(t0).Obj()}, "b": {Workload: copyOf().Admit(t0.Add(time.Second)).Obj()}},
			},
			want: Plan{Delete: []string{"a"}, Record: &workload.Placement{Cluster: "b"}, CreateJob: "b", Status: dispatched("b"), Events: []Event{dispatchedEvent("b")}},
		},
		"the placement records the admission by its eviction count": {
			o: Observed{
				Workload: local().Nominated("a").Evicted("Preempted", 2).Obj(), Check: pendingCheck, Candidates: []Candidate{{Name: "a"}}, Health: connected, Evictions: 2,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}},
			},
			want: Plan{Record: &workload.Placement{Cluster: "a", Evictions: 2}, CreateJob: "a", Status: dispatched("a"), Events: []Event{dispatchedEvent("a")}},
		},
		"a winner not yet nominated is nominated first": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a"}}, RequeueAfter: time.Second},
		},
		"other admission checks not Ready: nothing leaves the manager": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: both, Health: connected, ChecksNotReady: []string{"approval"},
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}}},
			want: Plan{Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: "Waiting for the admission checks approval to be Ready before dispatching."}},
		},
		"a rejected job: Rejected, nothing dispatched": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected, Rejection: "set managedBy"},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateRejected, Message: "set managedBy"},
				Events: []Event{{Type: "Warning", Reason: "Rejected", Message: "set managedBy"}},
			},
		},
		"the planner nominates one: only it gets a copy, and a look again once the capacity snapshots caught up": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Nominate: []string{"b"}, NextRound: time.Minute, ExpiresIn: 10 * time.Minute,
					Message: "Nominated b (best of 2; 1 more eligible in later rounds)."}},
			want: Plan{
				Create: []string{"b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 2; 1 more eligible in later rounds)."},
				RequeueAfter: nominationRecheck,
			},
		},
		"a nomination unchanged looks again at the next round": {
			o:    nominatedOnB(t0.Add(time.Minute)),
			want: stillNominatedOnB(time.Minute),
		},
		// A pass run for another event right after the nomination must not
		// use up its recheck (it did, in e2e's placement spec).
		"a nomination a second old, planned again for another event, keeps its recheck": {
			o:    nominatedOnB(t0.Add(time.Second)),
			want: stillNominatedOnB(nominationRecheck),
		},
		"a filter failing on one cluster is an event when the nomination changes": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Nominate: []string{"a"}, Message: "Nominated a (best of 2). Passed over: b: the policy's filter failed: no such key: zone.",
					Errors: []placement.ClusterError{{Cluster: "b", Err: errors.New("filter: no such key: zone")}}}},
			want: Plan{
				Create: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated a (best of 2). Passed over: b: the policy's filter failed: no such key: zone."},
				Events: []Event{
					{Type: "Warning", Reason: "PlacementError", Cluster: "b", Message: `Cluster "b" is not eligible: filter: no such key: zone.`},
				},
			},
		},
		// Issue 14: a filter failing on every cluster left no event.
		"a filter failing on every cluster is an event per cluster when the message changes": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Message: "Passed over: a: the policy's filter failed: gave string, want bool; b: the policy's filter failed: gave string, want bool.",
					Errors: []placement.ClusterError{{Cluster: "a", Err: errors.New("filter: gave string, want bool")}, {Cluster: "b", Err: errors.New("filter: gave string, want bool")}}}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStatePending,
					Message: "No worker can take the workload now. Passed over: a: the policy's filter failed: gave string, want bool; b: the policy's filter failed: gave string, want bool."},
				Events: []Event{
					{Type: "Warning", Reason: "PlacementError", Cluster: "a", Message: `Cluster "a" is not eligible: filter: gave string, want bool.`},
					{Type: "Warning", Reason: "PlacementError", Cluster: "b", Message: `Cluster "b" is not eligible: filter: gave string, want bool.`},
				},
			},
		},
		"a filter failing on every cluster is not reported again while the message stands": {
			o: Observed{Workload: local().Obj(), Candidates: both, Health: connected,
				Check: kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending,
					Message: "No worker can take the workload now. Passed over: a: the policy's filter failed: gave string, want bool."},
				Decision: &placement.Decision{Message: "Passed over: a: the policy's filter failed: gave string, want bool.",
					Errors: []placement.ClusterError{{Cluster: "a", Err: errors.New("filter: gave string, want bool")}}}},
			want: Plan{},
		},
		"a copy admitted on a cluster the planner no longer nominates does not win, and goes": {
			o: Observed{Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Nominate: []string{"b"}, Message: "Nominated b (best of 2). Passed over: a: filtered out by the policy's filter."},
				Remotes:  map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}, "b": {Workload: copyOf().Obj()}}},
			want: Plan{
				Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 2). Passed over: a: filtered out by the policy's filter."},
				Events: []Event{{Type: "Normal", Reason: "Nominated", Message: "Copied the workload to b. Nominated b (best of 2). Passed over: a: filtered out by the policy's filter."}},
			},
		},
		"no worker's quota could ever hold it: Rejected, saying why": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Impossible: true, Message: "No cluster could ever hold the workload. Passed over: a: too small; b: too small."},
				Remotes:  map[string]Remote{"a": {Workload: copyOf().Obj()}}},
			want: Plan{
				Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStateRejected,
					Message: "No worker's quota could ever hold the whole workload. No cluster could ever hold the workload. Passed over: a: too small; b: too small."},
				Events: []Event{{Type: "Warning", Reason: "NoCapacity",
					Message: "No worker's quota could ever hold the whole workload. No cluster could ever hold the workload. Passed over: a: too small; b: too small."}},
			},
		},
		"waited longer than maxWaitTime, none admitted: Retry with the reasons": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Expired: true, Nominate: []string{"a"}, Message: "Waited longer than maxWaitTime (5m0s). Nominated a (best of 2)."},
				Remotes:  map[string]Remote{"a": {Workload: copyOf().Obj()}}},
			want: Plan{
				Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStateRetry,
					Message: "No worker admitted the workload within the policy's maxWaitTime; requeueing it. Waited longer than maxWaitTime (5m0s). Nominated a (best of 2)."},
				Events: []Event{{Type: "Warning", Reason: "WaitedTooLong",
					Message: "No worker admitted the workload within the policy's maxWaitTime; requeueing it. Waited longer than maxWaitTime (5m0s). Nominated a (best of 2)."}},
			},
		},
		"waited longer than maxWaitTime, but admitted just now: it is dispatched": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Expired: true, Nominate: []string{"a"}},
				Remotes:  map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Record: &workload.Placement{Cluster: "a"}, CreateJob: "a", Status: dispatched("a"), Events: []Event{dispatchedEvent("a")}},
		},
		"a worker that refuses the job as it is is not nominated": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Health: connected,
				Candidates: []Candidate{{Name: "a", Refuses: "no room for the worker's runtimePatch"}, {Name: "b"}}},
			want: Plan{
				Create: []string{"b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
					Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 2). Passed over: a: no room for the worker's runtimePatch."},
			},
		},
		"every worker refuses the job as it is: Rejected, saying why for each": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Health: connected,
				Candidates: []Candidate{{Name: "a", Refuses: "full"}, {Name: "b", Refuses: "full too"}},
				Remotes:    map[string]Remote{"a": {Workload: copyOf().Obj()}}},
			want: Plan{
				Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStateRejected, Message: "No worker can ever take the job as it is: a: full; b: full too"},
				Events: []Event{{Type: "Warning", Reason: "Rejected", Message: "No worker can ever take the job as it is: a: full; b: full too"}},
			},
		},
		"its AdmissionCheck deleted before placement: Pending with why, copies kept, nothing new": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Health: connected, CheckMissing: "AdmissionCheck gone.",
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}}},
			want: Plan{Status: &StatusChange{State: kueue.CheckStatePending, Message: "AdmissionCheck gone.", Nominated: []string{"a"}}},
		},
		"a misconfigured ClusterQueue: Pending with the reason, no copies": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Misconfigured: "remove one check",
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}}},
			want: Plan{
				Delete: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Message: "remove one check"},
				Events: []Event{{Type: "Warning", Reason: "Misconfigured", Message: "remove one check"}},
			},
		},
		"a stale copy of an earlier Workload goes, a fresh one replaces it": {
			o: Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: []Candidate{{Name: "a"}}, Health: connected,
				Remotes: map[string]Remote{"a": {Stale: true}}},
			want: Plan{
				Delete: []string{"a"},
				Create: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a"}, Message: "Waiting for a nominated worker to admit the workload. Nominated a (best of 1)."},
			},
		},
		"Retry: wait for Kueue to evict": {
			o: Observed{Workload: local().ClusterName("a").Obj(), Check: retryCheck, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}}},
			want: Plan{},
		},
	}
	runPlanCases(t, cases)
}

// allAtOnce is the planner's decision for an AllAtOnce policy over the
// candidates, whose capacity is unknown.
func allAtOnce(o Observed) *placement.Decision {
	in := placement.Input{Policy: placement.Policy{Strategy: courier.AllAtOnce}, Now: o.Now, Started: o.Now, Nominated: o.Workload.Status.NominatedClusterNames}
	for _, c := range o.Candidates {
		in.Clusters = append(in.Clusters, placement.Cluster{Name: c.Name, Unusable: cmp.Or(c.Refuses, c.Unusable)})
	}
	d := placement.Plan(in)
	return &d
}

func runPlanCases(t *testing.T, cases map[string]struct {
	o    Observed
	want Plan
}) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.o.Remotes == nil {
				tc.o.Remotes = map[string]Remote{}
			}
			tc.o.HasCheck = tc.o.Check.Name != ""
			if tc.o.KueueFinishGrace == 0 {
				tc.o.KueueFinishGrace = grace
			}
			if tc.o.Decision == nil && len(tc.o.Candidates) > 0 {
				tc.o.Decision = allAtOnce(tc.o)
			}
			got := decide(tc.o)
			if diff := gocmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"), ignoreMoveTimes); diff != "" {
				t.Errorf("decide() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// nominatedOnB observes, at now, a workload nominated to b, whose copy
// there was made at t0, with a worker left for the next round.
func nominatedOnB(now time.Time) Observed {
	copy := workload.CopyFor(local().Obj(), "courier", false)
	copy.CreationTimestamp = metav1.NewTime(t0)
	return Observed{Workload: local().Nominated("b").Obj(), Check: pendingCheck, Candidates: both, Health: connected, Now: now,
		Remotes: map[string]Remote{"b": {Workload: copy}},
		Decision: &placement.Decision{Nominate: []string{"b"}, NextRound: time.Minute, ExpiresIn: 10 * time.Minute,
			Message: "Nominated b (best of 2; 1 more eligible in later rounds)."}}
}

// stillNominatedOnB is the plan for nominatedOnB: wait, and look again.
func stillNominatedOnB(requeue time.Duration) Plan {
	return Plan{
		Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"b"},
			Message: "Waiting for a nominated worker to admit the workload. Nominated b (best of 2; 1 more eligible in later rounds)."},
		RequeueAfter: requeue,
	}
}
