package fence

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestDecide(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	const timeout = time.Minute
	cases := map[string]struct {
		now     time.Time
		hb      Heartbeat
		manager ManagerView
		want    Decision
	}{
		"fresh, no manager": {
			now:  at(59 * time.Second),
			hb:   Heartbeat{Seen: start, Duration: timeout},
			want: Decision{Fresh, ReasonHeartbeatFresh},
		},
		"unchanged for exactly its duration is still fresh": {
			now:  at(timeout),
			hb:   Heartbeat{Seen: start, Duration: timeout},
			want: Decision{Fresh, ReasonHeartbeatFresh},
		},
		"fresh, even with the worker revoked": {
			now:     at(10 * time.Second),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(9 * time.Second), Revoked: true},
			want:    Decision{Fresh, ReasonHeartbeatFresh},
		},
		"stale, no manager": {
			now:  at(timeout + time.Millisecond),
			hb:   Heartbeat{Seen: start, Duration: timeout},
			want: Decision{Fenced, ReasonNoManager},
		},
		"stale, manager read just now, not revoked": {
			now:     at(5 * time.Minute),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(5*time.Minute - time.Second)},
			want:    Decision{Held, ReasonNotRevoked},
		},
		"stale, manager last read exactly its duration ago": {
			now:     at(5 * time.Minute),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(4 * time.Minute)},
			want:    Decision{Held, ReasonNotRevoked},
		},
		"stale, manager unreadable for longer than the heartbeat's duration": {
			now:     at(5 * time.Minute),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(4*time.Minute - time.Millisecond)},
			want:    Decision{Fenced, ReasonManagerUnreachable},
		},
		"stale, manager read recently and revoked": {
			now:     at(2 * time.Minute),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(2*time.Minute - time.Second), Revoked: true},
			want:    Decision{Fenced, ReasonRevoked},
		},
		"stale, the last read showed revoked, unreadable since": {
			now:     at(2 * time.Minute),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(90 * time.Second), Revoked: true},
			want:    Decision{Fenced, ReasonRevoked},
		},
		"stale, manager never read yet, within the duration of the fence's start": {
			now:     at(61 * time.Second),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: at(30 * time.Second)},
			want:    Decision{Held, ReasonManagerNotReadYet},
		},
		"stale, manager never read since the fence started": {
			now:     at(61 * time.Second),
			hb:      Heartbeat{Seen: start, Duration: timeout},
			manager: ManagerView{Configured: true, Since: start},
			want:    Decision{Fenced, ReasonManagerUnreachable},
		},
		"a short heartbeat duration counts, not the manager's": {
			now:     at(10 * time.Second),
			hb:      Heartbeat{Seen: start, Duration: 3 * time.Second},
			manager: ManagerView{Configured: true, Since: start, ReadAt: at(6 * time.Second)},
			want:    Decision{Fenced, ReasonManagerUnreachable},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Decide(tc.now, tc.hb, tc.manager)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNeedsFence(t *testing.T) {
	cases := map[string]struct {
		wl   *kueue.Workload
		want bool
	}{
		"active unset": {
			wl:   kueuetesting.MakeWorkload("w", "ns").Obj(),
			want: true,
		},
		"active, admitted": {
			wl:   kueuetesting.MakeWorkload("w", "ns").Active(true).ReserveQuota("cq").Admit(time.Time{}).Obj(),
			want: true,
		},
		"already inactive": {
			wl:   kueuetesting.MakeWorkload("w", "ns").Active(false).Obj(),
			want: false,
		},
		"finished": {
			wl:   kueuetesting.MakeWorkload("w", "ns").Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", time.Time{}).Obj(),
			want: false,
		},
		"a Finished condition that is False": {
			wl:   kueuetesting.MakeWorkload("w", "ns").Condition(kueue.WorkloadFinished, metav1.ConditionFalse, "Running", time.Time{}).Obj(),
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, needsFence(tc.wl)); diff != "" {
				t.Errorf("needsFence (-want +got):\n%s", diff)
			}
		})
	}
}
