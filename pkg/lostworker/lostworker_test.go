package lostworker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

var (
	t0       = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	settings = Settings{Policy: courier.LostWorkerFenced, Timeout: 15 * time.Minute, FenceMargin: 5 * time.Minute,
		SelfFaultShare: 50, SelfFaultWindow: 2 * time.Minute, Started: t0.Add(-time.Hour)}
)

// worker is a WorkerCluster that was Active, out of reach since lost (a
// zero time: reachable), with a fence that answered if fenced.
func worker(name string, lost time.Time, reason string, fenced bool) *courier.WorkerCluster {
	wc := &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	wc.Status.KubernetesVersion = "v1.36.3"
	active := metav1.Condition{Type: courier.WorkerClusterActive, Status: metav1.ConditionTrue, Reason: courier.ReasonConnected}
	if !lost.IsZero() {
		wc.Status.DisconnectedSince = &metav1.Time{Time: lost}
		active.Status, active.Reason = metav1.ConditionFalse, reason
	}
	wc.Status.Conditions = append(wc.Status.Conditions, active)
	if fenced {
		wc.Status.Conditions = append(wc.Status.Conditions, metav1.Condition{Type: courier.WorkerClusterFenceReady, Status: metav1.ConditionTrue, Reason: courier.ReasonFenceAnswering})
	}
	return wc
}

// withFence sets the FenceReady condition of wc.
func withFence(wc *courier.WorkerCluster, status metav1.ConditionStatus, reason string) *courier.WorkerCluster {
	meta.SetStatusCondition(&wc.Status.Conditions, metav1.Condition{Type: courier.WorkerClusterFenceReady, Status: status, Reason: reason})
	return wc
}

func TestSelfFault(t *testing.T) {
	unreachable := courier.ReasonUnreachable
	cases := map[string]struct {
		workers []*courier.WorkerCluster
		want    bool
	}{
		"one of four lost": {workers: []*courier.WorkerCluster{
			worker("a", t0, unreachable, true), worker("b", time.Time{}, "", true), worker("c", time.Time{}, "", true), worker("d", time.Time{}, "", true)}},
		"two of four within the window: half": {want: true, workers: []*courier.WorkerCluster{
			worker("a", t0, unreachable, true), worker("b", t0.Add(time.Minute), unreachable, true), worker("c", time.Time{}, "", true), worker("d", time.Time{}, "", true)}},
		"two of four, far apart": {workers: []*courier.WorkerCluster{
			worker("a", t0, unreachable, true), worker("b", t0.Add(time.Hour), unreachable, true), worker("c", time.Time{}, "", true), worker("d", time.Time{}, "", true)}},
		"every worker at once": {want: true, workers: []*courier.WorkerCluster{
			worker("a", t0, unreachable, true), worker("b", t0.Add(time.Second), unreachable, true), worker("c", t0.Add(2*time.Second), unreachable, true)}},
		"refused credentials are no network fault": {workers: []*courier.WorkerCluster{
			worker("a", t0, courier.ReasonForbidden, true), worker("b", t0, courier.ReasonForbidden, true)}},
		"a single worker: nothing to tell it from": {workers: []*courier.WorkerCluster{worker("a", t0, unreachable, true)}},
		"a worker never Active does not count": {workers: func() []*courier.WorkerCluster {
			fresh := worker("b", time.Time{}, "", false)
			fresh.Status = courier.WorkerClusterStatus{}
			return []*courier.WorkerCluster{worker("a", t0, unreachable, true), fresh}
		}()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SelfFault(tc.workers, settings) != ""; got != tc.want {
				t.Errorf("SelfFault() = %q, want suspected: %t", SelfFault(tc.workers, settings), tc.want)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	lost := func() *courier.WorkerCluster { return worker("a", t0, courier.ReasonUnreachable, true) }
	cases := map[string]struct {
		wc        *courier.WorkerCluster
		connected bool
		heartbeat time.Time
		now       time.Time
		selfFault string
		want      bool
		wantWait  time.Duration
	}{
		"lost, the timeout less the fence margin not over": {wc: lost(), heartbeat: t0, now: t0.Add(5 * time.Minute), wantWait: 5 * time.Minute},
		"lost, the timeout less the fence margin over":     {wc: lost(), heartbeat: t0, now: t0.Add(10 * time.Minute), want: true},
		"reachable":                {wc: lost(), connected: true, heartbeat: t0, now: t0.Add(time.Hour)},
		"a fault of Courier's own": {wc: lost(), heartbeat: t0, now: t0.Add(time.Hour), selfFault: "3 of 4"},
		"no fence ever answered":   {wc: worker("a", t0, courier.ReasonUnreachable, false), heartbeat: t0, now: t0.Add(time.Hour)},
		"the heartbeat failed before the worker was lost, its API server down": {wc: withFence(lost(), metav1.ConditionFalse, courier.ReasonHeartbeatFailing),
			heartbeat: t0, now: t0.Add(10 * time.Minute), want: true},
		"the fence was stopping the copies when the worker was lost": {wc: withFence(lost(), metav1.ConditionFalse, courier.ReasonFenceStopping),
			heartbeat: t0, now: t0.Add(10 * time.Minute), want: true},
		"no fence answered, the heartbeat failing or not": {wc: withFence(lost(), metav1.ConditionFalse, courier.ReasonNoFence),
			heartbeat: t0, now: t0.Add(time.Hour)},
		"policy Timeout": {wc: func() *courier.WorkerCluster {
			w := lost()
			w.Spec.LostWorkerPolicy = courier.LostWorkerTimeout
			return w
		}(),
			heartbeat: t0, now: t0.Add(time.Hour)},
		"no heartbeat since Courier started: counted from the start": {wc: worker("a", settings.Started, courier.ReasonUnreachable, true),
			now: settings.Started.Add(5 * time.Minute), wantWait: 5 * time.Minute},
		"counted out of reach moments ago, the timeout less the fence margin over: not before the self-fault window is": {
			wc: lost(), heartbeat: t0.Add(-20 * time.Minute), now: t0.Add(30 * time.Second), wantWait: 90 * time.Second},
		"counted out of reach for the self-fault window, the timeout less the fence margin over": {
			wc: lost(), heartbeat: t0.Add(-20 * time.Minute), now: t0.Add(2 * time.Minute), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, wait := Revoke(tc.wc, tc.connected, tc.heartbeat, tc.now, tc.selfFault, settings)
			if got != tc.want || wait != tc.wantWait {
				t.Errorf("Revoke() = %t, %s; want %t, %s", got, wait, tc.want, tc.wantWait)
			}
		})
	}
}

// A revocation another process wrote counts only from this one's start.
func TestMovableAt(t *testing.T) {
	cases := map[string]struct {
		revoked *metav1.Time
		want    *metav1.Time
	}{
		"not revoked":            {},
		"revoked since starting": {revoked: &metav1.Time{Time: t0}, want: &metav1.Time{Time: t0.Add(5 * time.Minute)}},
		"revoked before a restart": {revoked: &metav1.Time{Time: settings.Started.Add(-time.Hour)},
			want: &metav1.Time{Time: settings.Started.Add(5 * time.Minute)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wc := worker("a", t0, courier.ReasonUnreachable, true)
			wc.Status.RevokedSince = tc.revoked
			if diff := cmp.Diff(tc.want, MovableAt(wc, settings)); diff != "" {
				t.Errorf("MovableAt() (-want +got):\n%s", diff)
			}
		})
	}
}
