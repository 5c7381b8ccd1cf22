package plan

import (
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// A workload whose every worker was passed over (a namespace missing
// everywhere) is looked at again when the first pass-over ends, and one
// waiting for a job copy Courier created elsewhere looks again soon.
func TestRecheck(t *testing.T) {
	cases := map[string]struct {
		notes  map[string]time.Time
		unseen bool
		want   time.Duration
	}{
		"no note":                 {want: 0},
		"one note in force":       {notes: map[string]time.Time{"a": now.Add(30 * time.Second)}, want: 30*time.Second + time.Millisecond},
		"the first one to end":    {notes: map[string]time.Time{"a": now.Add(time.Minute), "b": now.Add(10 * time.Second)}, want: 10*time.Second + time.Millisecond},
		"a note that ended":       {notes: map[string]time.Time{"a": now.Add(-time.Second)}, want: 0},
		"one ended, one not":      {notes: map[string]time.Time{"a": now.Add(-time.Second), "b": now.Add(5 * time.Second)}, want: 5*time.Second + time.Millisecond},
		"a job copy not shown":    {unseen: true, want: requeueSoon},
		"both, the sooner counts": {notes: map[string]time.Time{"a": now.Add(time.Minute)}, unseen: true, want: requeueSoon},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := Observed{Now: now, UnseenJob: tc.unseen}
			for c, until := range tc.notes {
				if o.PassedOver == nil {
					o.PassedOver = map[string]PassOver{}
				}
				o.PassedOver[c] = PassOver{Reason: "passed over", Until: until}
			}
			if diff := gocmp.Diff(tc.want, recheck(o)); diff != "" {
				t.Errorf("recheck() (-want +got):\n%s", diff)
			}
		})
	}
}

// Decide answers an observation that stopped early without planning, and
// asks the placement planner only for a workload with candidates.
func TestDecide(t *testing.T) {
	wl := local().Obj()
	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"the cache behind Courier's write: look again soon, do nothing": {
			o: Observed{Workload: wl, Behind: true}, want: Plan{RequeueAfter: requeueSoon},
		},
		"not Courier's: its copies go from every worker": {
			o: Observed{Workload: wl, Disowned: true}, want: Plan{RemoveEverywhere: true},
		},
		"the job behind the status Courier mirrored: look again soon": {
			o: Observed{Workload: wl, JobBehind: true}, want: Plan{RequeueAfter: requeueSoon},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := gocmp.Diff(tc.want, Decide(tc.o)); diff != "" {
				t.Errorf("Decide() (-want +got):\n%s", diff)
			}
		})
	}
	o := Observed{Now: now, Workload: local().Obj(), Check: pendingCheck, HasCheck: true, Candidates: both, Health: connected, Remotes: map[string]Remote{},
		PlacementInput: &placement.Input{Now: now, Started: now, RoundsSince: now,
			Clusters: []placement.Cluster{{Name: "a"}, {Name: "b", Unusable: "not connected"}}}}
	p := Decide(o)
	if p.Decision == nil || !gocmp.Equal([]string{"a"}, p.Decision.Nominate) {
		t.Fatalf("Decide() decision = %+v, want the planner's, nominating a", p.Decision)
	}
	if diff := gocmp.Diff([]string{"a"}, p.Create); diff != "" {
		t.Errorf("Decide() creates (-want +got):\n%s", diff)
	}
}

// A copy Courier created moments ago that the informer does not show yet is
// not created again; the pass looks again when it should have shown.
func TestUnseenCopiesAreNotCreatedAgain(t *testing.T) {
	cases := map[string]struct {
		o    Observed
		want Plan
	}{
		"a Workload copy created on a, not shown": {
			o: Observed{Now: now, Workload: local().Obj(), Check: pendingCheck, HasCheck: true, Candidates: both, Health: connected,
				Remotes: map[string]Remote{"a": {UnseenWorkload: true}, "b": {}}, Decision: &placement.Decision{Nominate: []string{"a", "b"}}},
			want: Plan{Create: []string{"b"}, RequeueAfter: unseenCopyRecheck,
				Status: &StatusChange{State: "Pending", Message: "Waiting for a nominated worker to admit the workload. ", Nominated: []string{"a", "b"}}},
		},
		"the job created on the placed worker, not shown: no second create, the check Ready": {
			o: Observed{Now: now, Workload: local().ClusterName("a").Obj(), Check: pendingCheck, HasCheck: true, Placement: &workload.Placement{Cluster: "a"}, Health: connected,
				Remotes: map[string]Remote{"a": {Workload: copyOf().Admit(t0).Obj(), UnseenJob: true}}},
			want: Plan{RequeueAfter: unseenCopyRecheck, Status: dispatched("a"), Events: []Event{dispatchedEvent("a")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decide(tc.o)
			if diff := gocmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(unstructured.Unstructured{})); diff != "" {
				t.Errorf("decide() (-want +got):\n%s", diff)
			}
		})
	}
}
