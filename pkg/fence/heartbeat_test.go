package fence

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

func lease(name, version string, seconds *int32) coordinationv1.Lease {
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: seconds},
	}
}

func TestHeartbeatsObserve(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	type list struct {
		sent   time.Time
		leases []coordinationv1.Lease
	}
	cases := map[string]struct {
		lists       []list
		want        map[string]Heartbeat
		wantChanges changes
	}{
		"a heartbeat present at the first list counts from the fence's start": {
			lists:       []list{{sent: at(3 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", ptr.To[int32](120))}}},
			want:        map[string]Heartbeat{"a": {Seen: start, Duration: 2 * time.Minute}},
			wantChanges: changes{added: []string{"a"}},
		},
		"a new version counts from the list that first showed it": {
			lists: []list{
				{sent: at(time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", ptr.To[int32](120))}},
				{sent: at(2 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", ptr.To[int32](120))}},
				{sent: at(3 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "7", ptr.To[int32](120))}},
				{sent: at(4 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "7", ptr.To[int32](120))}},
			},
			want:        map[string]Heartbeat{"a": {Seen: at(3 * time.Second), Duration: 2 * time.Minute}},
			wantChanges: changes{},
		},
		"a renewal is reported by the list that shows it": {
			lists: []list{
				{sent: at(time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", ptr.To[int32](120))}},
				{sent: at(2 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "2", ptr.To[int32](120))}},
			},
			want:        map[string]Heartbeat{"a": {Seen: at(2 * time.Second), Duration: 2 * time.Minute}},
			wantChanges: changes{renewed: []string{"a"}},
		},
		"a heartbeat created after the first list counts from the list that first showed it": {
			lists: []list{
				{sent: at(time.Second)},
				{sent: at(9 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-b", "3", ptr.To[int32](30))}},
			},
			want:        map[string]Heartbeat{"b": {Seen: at(9 * time.Second), Duration: 30 * time.Second}},
			wantChanges: changes{added: []string{"b"}},
		},
		"a deleted heartbeat forgets its origin": {
			lists: []list{
				{sent: at(time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", ptr.To[int32](120)), lease("courier-heartbeat-b", "2", ptr.To[int32](120))}},
				{sent: at(2 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-b", "2", ptr.To[int32](120))}},
			},
			want:        map[string]Heartbeat{"b": {Seen: start, Duration: 2 * time.Minute}},
			wantChanges: changes{gone: []string{"a"}},
		},
		"other Leases are not heartbeats": {
			lists: []list{{sent: at(time.Second), leases: []coordinationv1.Lease{
				lease("courier-fence", "1", ptr.To[int32](30)),
				lease("courier-fence-leader", "2", ptr.To[int32](15)),
				lease("courier-heartbeat-", "3", ptr.To[int32](15)),
			}}},
			want:        map[string]Heartbeat{},
			wantChanges: changes{},
		},
		"a heartbeat without a duration counts with the default fence timeout": {
			lists: []list{{sent: at(time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", nil), lease("courier-heartbeat-b", "1", ptr.To[int32](0))}}},
			want: map[string]Heartbeat{
				"a": {Seen: start, Duration: configv1alpha1.DefaultFenceTimeout},
				"b": {Seen: start, Duration: configv1alpha1.DefaultFenceTimeout},
			},
			wantChanges: changes{added: []string{"a", "b"}},
		},
		"a changed duration applies at once": {
			lists: []list{
				{sent: at(time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "1", ptr.To[int32](120))}},
				{sent: at(2 * time.Second), leases: []coordinationv1.Lease{lease("courier-heartbeat-a", "2", ptr.To[int32](10))}},
			},
			want:        map[string]Heartbeat{"a": {Seen: at(2 * time.Second), Duration: 10 * time.Second}},
			wantChanges: changes{renewed: []string{"a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHeartbeats(start)
			var last changes
			for _, l := range tc.lists {
				last = h.observe(l.sent, l.leases)
			}
			got := map[string]Heartbeat{}
			for origin, hb := range h.byOrigin {
				got[origin] = hb.Heartbeat
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("heartbeats (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantChanges, last, cmp.AllowUnexported(changes{})); diff != "" {
				t.Errorf("changes of the last list (-want +got):\n%s", diff)
			}
		})
	}
}
