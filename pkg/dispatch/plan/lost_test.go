package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// What becomes of a placed job whose worker "a" is lost, under each
// lost-worker policy: Timeout moves it after workerLostTimeout; Never keeps
// it, saying so once; Fenced moves it only on a worker whose fence
// answered, a fence's margin after Courier revoked it; a fault of
// Courier's own moves nothing.
func TestPlanLostWorkerPolicies(t *testing.T) {
	lostAt := now.Add(-20 * time.Minute)
	lost := func(policy courier.LostWorkerPolicy, fence bool, movable *metav1.Time) map[string]Health {
		return map[string]Health{"a": {LostSince: at(lostAt), LostReason: courier.EventWorkerLost, LostWhy: "has been unreachable since 09:40",
			Policy: policy, FenceAnswered: fence, MovableAt: movable}}
	}
	observed := func(h map[string]Health, check kueue.AdmissionCheckState, selfFault string) Observed {
		return Observed{Now: now, Workload: local().ClusterName("a").Obj(), Check: check, HasCheck: true,
			Placement: &workload.Placement{Cluster: "a"}, Health: h, WorkerLostTimeout: 15 * time.Minute, SelfFault: selfFault}
	}
	kept := func(note string) Plan {
		return Plan{Status: &StatusChange{State: kueue.CheckStateReady, Message: readyMsg + " " + note, ClusterName: ptr.To("a")},
			Events: []Event{{Type: "Warning", Reason: courier.EventKeptOnLostWorker, Message: note, Cluster: "a"}}}
	}
	neverNote := `Worker "a" has been unreachable since 09:40; its lostWorkerPolicy is Never: the job stays there, and goes on when the worker is back.`
	noFenceNote := `Worker "a" has been unreachable since 09:40; no fence answered there, so under the Fenced policy the job stays, and goes on when the worker is back.`
	selfNote := `Worker "a" has been unreachable since 09:40; 3 of 4 workers went out of Courier's reach.`
	runPlanCases(t, map[string]struct {
		o    Observed
		want Plan
	}{
		"Timeout, past workerLostTimeout: sent back to Kueue": {
			o:    observed(lost(courier.LostWorkerTimeout, false, nil), readyCheck, ""),
			want: retry(courier.EventWorkerLost, `Worker "a" has been unreachable since 09:40, for longer than workerLostTimeout (15m0s); dispatching the workload again.`),
		},
		"Never, past workerLostTimeout: kept, said once": {
			o:    observed(lost(courier.LostWorkerNever, true, nil), readyCheck, ""),
			want: kept(neverNote),
		},
		"Never, said already: nothing more": {
			o: observed(lost(courier.LostWorkerNever, true, nil), kueue.AdmissionCheckState{Name: check, State: kueue.CheckStateReady,
				Message: readyMsg + " " + neverNote}, ""),
		},
		"Fenced, no fence ever answered: kept": {
			o:    observed(lost(courier.LostWorkerFenced, false, nil), readyCheck, ""),
			want: kept(noFenceNote),
		},
		"Fenced, not revoked yet: waits for the revocation": {
			o: observed(lost(courier.LostWorkerFenced, true, nil), readyCheck, ""),
		},
		"Fenced, revoked, the fence's margin not over: waits until it is": {
			o:    observed(lost(courier.LostWorkerFenced, true, at(now.Add(90*time.Second))), readyCheck, ""),
			want: Plan{RequeueAfter: 90 * time.Second},
		},
		"Fenced, revoked, the fence's margin over: sent back to Kueue": {
			o: observed(lost(courier.LostWorkerFenced, true, at(now.Add(-time.Second))), readyCheck, ""),
			want: retry(courier.EventWorkerLost, `Worker "a" has been unreachable since 09:40; Courier gave it up and its fence must have stopped the job by `+
				now.Add(-time.Second).UTC().Format(time.RFC3339)+`; dispatching the workload again.`),
		},
		"a fault of Courier's own: kept, under any policy": {
			o:    observed(lost(courier.LostWorkerTimeout, false, nil), readyCheck, "3 of 4 workers went out of Courier's reach"),
			want: kept(selfNote),
		},
		"Fenced, its WorkerCluster deleted, reachable: moved after workerLostTimeout, Courier removing the copies": {
			o: Observed{Now: now, Workload: local().ClusterName("a").Obj(), Check: readyCheck, HasCheck: true, Placement: &workload.Placement{Cluster: "a"},
				WorkerLostTimeout: 15 * time.Minute, Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), HasJob: true}},
				Health: map[string]Health{"a": {Connected: true, LostSince: at(lostAt), LostReason: courier.EventWorkerDraining, LostWhy: "has been draining",
					Policy: courier.LostWorkerFenced}}},
			want: func() Plan {
				p := retry(courier.EventWorkerDraining, `Worker "a" has been draining, for longer than workerLostTimeout (15m0s); dispatching the workload again.`)
				return p
			}(),
		},
		"an earlier admission's copies on a worker Never gives up: nothing is dispatched": {
			o: Observed{Now: now, Workload: local().Evicted("Preempted", 1).Obj(), Check: pendingCheck, HasCheck: true,
				Placement: &workload.Placement{Cluster: "a"}, Evictions: 1, WorkerLostTimeout: 15 * time.Minute, Candidates: both,
				Health: lost(courier.LostWorkerNever, true, nil)},
			want: Plan{Status: &StatusChange{State: kueue.CheckStatePending,
				Message: `Worker "a" held this workload before it was evicted and is out of reach; it may still run the job, so nothing is dispatched until it is back or counts as lost.`},
				Events: []Event{{Type: "Warning", Reason: courier.EventWaitingForWorker,
					Message: `Worker "a" held this workload before it was evicted and is out of reach; it may still run the job, so nothing is dispatched until it is back or counts as lost.`}}},
		},
	})
}
