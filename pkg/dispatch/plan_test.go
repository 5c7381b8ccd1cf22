package dispatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestPlan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	const check = "courier"
	local := func() *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload("wl", "ns").UID("uid").ReserveQuota("cq")
	}
	copyOf := func() *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq")
	}
	both := []Candidate{{Name: "a"}, {Name: "b"}}
	connected := map[string]Health{"a": {Connected: true}, "b": {Connected: true}}
	pendingCheck := kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending}
	readyCheck := kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateReady, Message: `Dispatched to worker "a", whose Kueue admitted the workload.`}

	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"new workload: copies to every usable candidate, nominated": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected},
			want: Plan{
				Create: []string{"a", "b"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a", "b"},
					Message: "Waiting for one of the nominated workers (a, b) to admit the workload."},
				Events: []Event{{Type: "Normal", Reason: "Nominated", Message: "Copied the workload to a, b."}},
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
					Message: "Waiting for one of the nominated workers (a) to admit the workload. Not nominated: b: does not serve TrainJob.v1alpha1.trainer.kubeflow.org."},
				Events: []Event{{Type: "Normal", Reason: "Nominated", Message: "Copied the workload to a."}},
			},
		},
		"no usable worker: Pending with the reasons": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck,
				Candidates: []Candidate{{Name: "a", Unusable: "not connected"}}},
			want: Plan{Status: &StatusChange{State: kueue.CheckStatePending, Message: "No worker can take the workload now: a: not connected."}},
		},
		"waiting, nothing changed: no writes": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Candidates: both, Health: connected,
				Check:   kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending, Message: "Waiting for one of the nominated workers (a, b) to admit the workload."},
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}, "b": {Workload: copyOf().Obj()}},
			},
			want: Plan{},
		},
		"both admit: the first admitted wins, the other copy goes": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{
					"a": {Workload: copyOf().Admit(t0.Add(time.Second)).Obj()},
					"b": {Workload: copyOf().Admit(t0).Obj()},
				},
			},
			want: Plan{
				Delete:    []string{"a"},
				CreateJob: "b",
				Status:    &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("b"), Message: `Dispatched to worker "b", whose Kueue admitted the workload.`},
				Events:    []Event{{Type: "Normal", Reason: "Dispatched", Message: `Dispatched to worker "b", whose Kueue admitted the workload.`}},
			},
		},
		"admitted at the same time: ties go by name": {
			o: Observed{
				Workload: local().Nominated("a", "b").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}, "b": {Workload: copyOf().Admit(t0).Obj()}},
			},
			want: Plan{
				Delete:    []string{"b"},
				CreateJob: "a",
				Status:    &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: readyCheck.Message},
				Events:    []Event{{Type: "Normal", Reason: "Dispatched", Message: readyCheck.Message}},
			},
		},
		"a winner not yet nominated is nominated first": {
			o: Observed{
				Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}},
			},
			want: Plan{
				Status:       &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a"}},
				RequeueAfter: time.Second,
			},
		},
		"dispatched and running: mirror the job's status": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}},
			},
			want: Plan{SyncJob: "a"},
		},
		"dispatched, the job is missing: create it": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj()}},
			},
			want: Plan{CreateJob: "a"},
		},
		"dispatched: a stale copy on another worker goes": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}, "b": {Workload: copyOf().Obj(), HasJob: true}},
			},
			want: Plan{Delete: []string{"b"}, SyncJob: "a"},
		},
		"the worker finished it: final status first, then Finished with the worker's reason": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).
					Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj()}},
			},
			want: Plan{
				SyncJob: "a",
				Status: &StatusChange{State: kueue.CheckStateReady, ClusterName: ptr.To("a"), Message: `The workload finished on worker "a".`,
					Finished: &metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Succeeded"}},
				Events: []Event{{Type: "Normal", Reason: "Finished", Message: `The workload finished on worker "a". Succeeded`}},
			},
		},
		"finished on the manager: copies go, the check stays": {
			o: Observed{
				Workload: local().ClusterName("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check:    readyCheck, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}},
			},
			want: Plan{Delete: []string{"a"}},
		},
		"finished before the check turned Ready: the check is not left Pending": {
			o: Observed{
				Workload: local().Nominated("a").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", t0).Obj(),
				Check:    pendingCheck, Health: connected,
			},
			want: Plan{Status: &StatusChange{State: kueue.CheckStateReady, Message: "The workload finished."}},
		},
		"the worker evicted it: Retry": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Admit(t0).
					Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Preempted", t0).Obj()}},
			},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateRetry, ClusterName: ptr.To("a"),
					Message: `Worker "a" evicted the workload (Preempted: Preempted); dispatching the workload again.`},
				Events: []Event{{Type: "Warning", Reason: "RemoteEvicted", Message: `Worker "a" evicted the workload (Preempted: Preempted); dispatching the workload again.`}},
			},
		},
		"the worker's copy vanished: Retry": {
			o: Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, Health: connected, Remotes: map[string]Remote{}},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateRetry, ClusterName: ptr.To("a"), Message: `The workload's copy on worker "a" is gone; dispatching the workload again.`},
				Events: []Event{{Type: "Warning", Reason: "RemoteEvicted", Message: `The workload's copy on worker "a" is gone; dispatching the workload again.`}},
			},
		},
		"worker unreachable within the timeout: wait for the rest of it": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {DisconnectedSince: &metav1.Time{Time: now.Add(-10 * time.Minute)}}},
			},
			want: Plan{RequeueAfter: 5 * time.Minute},
		},
		"worker unreachable past the timeout, counted from the first disconnect: Retry": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, WorkerLostTimeout: 15 * time.Minute, Now: now,
				Health: map[string]Health{"a": {DisconnectedSince: &metav1.Time{Time: t0}}},
			},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateRetry, ClusterName: ptr.To("a"),
					Message: `Worker "a" has been unreachable since 2026-01-01T10:00:00Z, longer than workerLostTimeout (15m0s); dispatching the workload again.`},
				Events: []Event{{Type: "Warning", Reason: "WorkerLost",
					Message: `Worker "a" has been unreachable since 2026-01-01T10:00:00Z, longer than workerLostTimeout (15m0s); dispatching the workload again.`}},
			},
		},
		"worker with a configuration error: no re-dispatch": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, WorkerLostTimeout: time.Minute, Now: now,
				Health: map[string]Health{"a": {}},
			},
			want: Plan{},
		},
		"evicted on the manager: every copy goes and the placement is cleared": {
			o: Observed{
				Workload: local().ClusterName("a").Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Preempted", t0).Obj(),
				Check:    readyCheck, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}},
			},
			want: Plan{Delete: []string{"a"}, ClearJobActivity: true, Status: &StatusChange{State: kueue.CheckStateReady, Message: readyCheck.Message}},
		},
		"evicted on the manager while the worker is lost: the job's activity is cleared all the same": {
			o: Observed{
				Workload: local().ClusterName("a").Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "AdmissionCheck", t0).Obj(),
				Check:    kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending},
				Health:   map[string]Health{"a": {DisconnectedSince: &metav1.Time{Time: t0}}},
			},
			want: Plan{ClearJobActivity: true, Status: &StatusChange{State: kueue.CheckStatePending}},
		},
		"deactivated: copies go": {
			o: Observed{
				Workload: local().Nominated("a").Active(false).Obj(), Check: pendingCheck, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Obj()}},
			},
			want: Plan{Delete: []string{"a"}, ClearJobActivity: true, Status: &StatusChange{State: kueue.CheckStatePending}},
		},
		"the job is gone from the manager: copies go": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: readyCheck, JobMissing: true, Health: connected,
				Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}},
			},
			want: Plan{Delete: []string{"a"}, Status: &StatusChange{State: kueue.CheckStateReady, Message: readyCheck.Message}},
		},
		"a rejected job: Rejected, nothing dispatched": {
			o: Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected, Rejection: "set managedBy"},
			want: Plan{
				Status: &StatusChange{State: kueue.CheckStateRejected, Message: "set managedBy"},
				Events: []Event{{Type: "Warning", Reason: "Rejected", Message: "set managedBy"}},
			},
		},
		"Retry: wait for Kueue to evict": {
			o: Observed{
				Workload: local().ClusterName("a").Obj(), Check: kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateRetry},
				Health: connected, Remotes: map[string]Remote{"a": {HasJob: true, Workload: copyOf().Obj()}},
			},
			want: Plan{},
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
			o: Observed{
				Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: []Candidate{{Name: "a"}}, Health: connected,
				Remotes: map[string]Remote{"a": {Stale: true}},
			},
			want: Plan{
				Delete: []string{"a"},
				Create: []string{"a"},
				Status: &StatusChange{State: kueue.CheckStatePending, Nominated: []string{"a"}, Message: "Waiting for one of the nominated workers (a) to admit the workload."},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.o.Remotes == nil {
				tc.o.Remotes = map[string]Remote{}
			}
			got := plan(tc.o)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("plan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
