package act

import (
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/metrics"
	"github.com/courierdev/courier/pkg/placement"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

// The planner's own plans, read for metrics: each transition counts, and a
// pass that changes nothing counts nothing.
func TestOutcomeOf(t *testing.T) {
	local := func() *kueuetesting.WorkloadWrapper {
		return kueuetesting.MakeWorkload("wl", "ns").UID("uid").ReserveQuota("cq")
	}
	copyOf := func() *kueuetesting.WorkloadWrapper { return kueuetesting.MakeWorkload("wl", "ns").ReserveQuota("cq") }
	const check = "courier"
	pendingCheck := kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending}
	readyCheck := kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateReady, Message: `Dispatched to worker "a", whose Kueue admitted the workload.`}
	retryCheck := kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateRetry}
	both := []plan.Candidate{{Name: "a"}, {Name: "b"}}
	connected := map[string]plan.Health{"a": {Connected: true}, "b": {Connected: true}}
	// Quota reserved at t0 (the builder's reservation is timed now).
	reserved := func(w *kueuetesting.WorkloadWrapper) *kueue.Workload {
		wl := w.Obj()
		meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved).LastTransitionTime = metav1.NewTime(t0)
		return wl
	}
	ranked := &placement.Decision{Nominate: []string{"a"}, Message: "Nominated a (best of 2).",
		Considered: []placement.Verdict{{Cluster: "a", Eligible: true}, {Cluster: "b", Reason: placement.ReasonFilteredOut}}}
	cases := map[string]struct {
		o    plan.Observed
		want outcome
	}{
		"the first admitted copy wins: Ready on its worker, timed from the quota reservation": {
			o: plan.Observed{Workload: reserved(local().Nominated("a", "b")), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Nominate: []string{"a", "b"}},
				Remotes:  map[string]plan.Remote{"a": {Workload: copyOf().Admit(t0).Obj()}, "b": {Workload: copyOf().Obj()}}},
			want: outcome{readyOn: "a", reserved: t0},
		},
		"already Ready and mirrored: nothing counts": {
			o: plan.Observed{Workload: reserved(local().ClusterName("a")), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]plan.Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true, JobMirrored: true}}},
		},
		"the worker evicted its copy: re-dispatched for RemoteEvicted": {
			o: plan.Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]plan.Remote{"a": {Workload: copyOf().Admit(t0).Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, "Preempted", t0).Obj(), HasJob: true}}},
			want: outcome{retryOn: "a", retryReason: courier.EventRemoteEvicted},
		},
		"the worker lost past workerLostTimeout: re-dispatched for WorkerLost": {
			o: plan.Observed{Workload: local().ClusterName("a").Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Now: now, WorkerLostTimeout: time.Minute,
				Health: map[string]plan.Health{"a": {LostSince: &metav1.Time{Time: t0}, LostReason: courier.EventWorkerLost, LostWhy: "is unreachable"}}},
			want: outcome{retryOn: "a", retryReason: courier.EventWorkerLost},
		},
		"every worker refuses the job: each counts a rejection": {
			o: plan.Observed{Workload: local().Obj(), Check: pendingCheck, Health: connected,
				Candidates: []plan.Candidate{{Name: "a", Refuses: "no room for its patch"}, {Name: "b", Refuses: "no room for its patch"}}},
			want: outcome{rejectedBy: []string{"a", "b"}, rejectReason: courier.EventRejected},
		},
		"the manager refuses the job: no worker's rejection": {
			o: plan.Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected, Rejection: "set managedBy"},
		},
		"no worker's quota could ever hold it: rejected by each for NoCapacity, a NoCapacity decision": {
			o: plan.Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Impossible: true, Considered: []placement.Verdict{{Cluster: "a", Reason: "too small"}, {Cluster: "b", Reason: "too small"}}}},
			want: outcome{rejectedBy: []string{"a", "b"}, rejectReason: courier.EventNoCapacity, decision: metrics.DecisionNoCapacity,
				verdicts: map[string]string{"a": metrics.VerdictNoFit, "b": metrics.VerdictNoFit}},
		},
		"waited past maxWaitTime: a WaitedTooLong decision": {
			o: plan.Observed{Workload: local().Nominated("a").Obj(), Check: pendingCheck, Candidates: both, Health: connected,
				Decision: &placement.Decision{Expired: true, Nominate: []string{"a"}, Considered: ranked.Considered}},
			want: outcome{decision: metrics.DecisionWaitedTooLong, verdicts: map[string]string{"a": metrics.VerdictNominated, "b": metrics.VerdictFilteredOut}},
		},
		"a new nomination: a Nominated decision with each worker's verdict": {
			o:    plan.Observed{Workload: local().Obj(), Check: pendingCheck, Candidates: both, Health: connected, Decision: ranked},
			want: outcome{decision: metrics.DecisionNominated, verdicts: map[string]string{"a": metrics.VerdictNominated, "b": metrics.VerdictFilteredOut}},
		},
		"the same nomination again: nothing counts": {
			o: plan.Observed{Workload: local().Nominated("a").Obj(), Candidates: both, Health: connected, Decision: ranked,
				Check:   kueue.AdmissionCheckState{Name: check, State: kueue.CheckStatePending, Message: "Waiting for a nominated worker to admit the workload. Nominated a (best of 2)."},
				Remotes: map[string]plan.Remote{"a": {Workload: copyOf().Obj()}}},
		},
		"no worker can take it now: a Waiting decision, each worker's verdict": {
			o: plan.Observed{Workload: local().Obj(), Check: pendingCheck, Health: connected,
				Candidates: []plan.Candidate{{Name: "a", Unusable: "not connected"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
				Decision: &placement.Decision{Message: "Passed over: ...", Errors: []placement.ClusterError{{Cluster: "c", Err: errors.New("no such key")}},
					Considered: []placement.Verdict{{Cluster: "d", Eligible: true}, {Cluster: "a", Reason: "not connected"}, {Cluster: "b", Reason: "too small"}, {Cluster: "c", Reason: "the policy's filter failed"}}}},
			want: outcome{decision: metrics.DecisionWaiting, verdicts: map[string]string{
				"a": metrics.VerdictUnusable, "b": metrics.VerdictNoFit, "c": metrics.VerdictPolicyError, "d": metrics.VerdictOutranked}},
		},
		"the manager deactivated a dispatched workload: its copies go, evicted by the manager": {
			o: plan.Observed{Workload: local().ClusterName("a").Active(false).Obj(), Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]plan.Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}}},
			want: outcome{evictedFrom: "a"},
		},
		"the manager preempted a dispatched workload: evicted by the manager": {
			o: plan.Observed{Workload: local().Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, kueue.WorkloadEvictedByPreemption, t0).Obj(),
				Check: readyCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]plan.Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}}},
			want: outcome{evictedFrom: "a"},
		},
		"evicted for Courier's own Retry: the worker's eviction, counted before": {
			o: plan.Observed{Workload: local().Condition(kueue.WorkloadEvicted, metav1.ConditionTrue, kueue.WorkloadEvictedByAdmissionCheck, t0).Obj(),
				Check: retryCheck, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]plan.Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.o.HasCheck = true
			got := outcomeOf(tc.o, plan.Decide(tc.o))
			if diff := gocmp.Diff(tc.want, got, gocmp.AllowUnexported(outcome{})); diff != "" {
				t.Errorf("outcomeOf (-want +got):\n%s", diff)
			}
		})
	}
}
