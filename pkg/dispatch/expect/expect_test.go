package expect

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/placement"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func TestBehind(t *testing.T) {
	e := New()
	e.WroteOver("wl", "10", t0)
	e.WroteOver("wl", "11", t0.Add(time.Second))
	cases := map[string]struct {
		version string
		at      time.Time
		want    bool
	}{
		"the version the first write of a pass replaced": {version: "10", at: t0.Add(time.Second), want: true},
		"the version the second write replaced":          {version: "11", at: t0.Add(time.Second), want: true},
		"the version Courier wrote":                      {version: "12", at: t0.Add(time.Second)},
		"a cache 50 s behind":                            {version: "11", at: t0.Add(51 * time.Second), want: true},
		"long after the writes":                          {version: "11", at: t0.Add(time.Second + WrittenTTL + time.Millisecond)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := e.Behind("wl", tc.version, tc.at); got != tc.want {
				t.Errorf("Behind(%q) = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
	if e.Behind("other", "10", t0) {
		t.Error("another Workload's version is behind")
	}
}

// Once a pass reads a version none of Courier's writes replaced, the cache
// holds them all: they are forgotten, however recent.
func TestCaughtUp(t *testing.T) {
	e := New()
	e.WroteOver("wl", "10", t0)
	e.WroteOver("wl", "11", t0)
	e.CaughtUp("wl")
	if e.Behind("wl", "11", t0) {
		t.Error("a version Courier wrote over is behind after the cache caught up")
	}
	if got := e.Sizes()["written"]; got != 0 {
		t.Errorf("written holds %d entries after the cache caught up, want 0", got)
	}
}

// A Workload written more than a TTL ago starts afresh: its old versions
// are not awaited any more.
func TestWroteOverKeepsTheLastVersions(t *testing.T) {
	e := New()
	for i := range maxReplaced + 2 {
		e.WroteOver("wl", fmt.Sprint(i), t0)
	}
	if e.Behind("wl", "0", t0) || !e.Behind("wl", fmt.Sprint(maxReplaced+1), t0) {
		t.Errorf("Behind keeps the oldest versions, want the last %d", maxReplaced)
	}
	e.WroteOver("wl", "new", t0.Add(WrittenTTL+time.Second))
	if e.Behind("wl", fmt.Sprint(maxReplaced+1), t0.Add(WrittenTTL+time.Second)) {
		t.Error("a version written over more than a TTL ago is still awaited")
	}
}

func TestStillUnseen(t *testing.T) {
	key := CopyKey{Cluster: "w1", Kind: "TrainJob", Workload: "wl"}
	cases := map[string]struct {
		at      time.Time
		reached bool
		deleted bool
		want    bool
	}{
		"just created": {at: t0.Add(time.Second), want: true},
		"past CreatedTTL, the informer not read up":  {at: t0.Add(CreatedTTL + time.Second), want: true},
		"past CreatedTTL, the informer read past it": {at: t0.Add(CreatedTTL + time.Second), reached: true},
		"deleted since": {at: t0.Add(time.Second), deleted: true},
		"past CreatedKeep, forgotten whatever it was": {at: t0.Add(CreatedKeep + time.Second)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := New()
			e.Created(key, "copy", "7", t0)
			if tc.deleted {
				e.Deleted("copy", t0)
			}
			c, ok := e.CreatedCopy(key, tc.at)
			got := ok && e.StillUnseen(c, tc.at, func(version string) bool {
				if version != "7" {
					t.Errorf("reached asked for version %q, want the create's 7", version)
				}
				return tc.reached
			})
			if got != tc.want {
				t.Errorf("still unseen = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAssumed(t *testing.T) {
	gpu := []placement.PodSet{{Name: "main", Count: 1}}
	cases := map[string]struct {
		queue   string
		except  types.UID
		at      time.Time
		shown   []types.UID
		want    []placement.PodSet
		wantSaw []types.UID
	}{
		"the queue's copies":                {queue: "ns/lq", at: t0, want: append(append([]placement.PodSet{}, gpu...), gpu...)},
		"another queue's copies do not":     {queue: "ns/other", at: t0},
		"a Workload's own copy is no extra": {queue: "ns/lq", except: "a", at: t0, want: gpu},
		"copies the snapshot shows":         {queue: "ns/lq", at: t0, shown: []types.UID{"a"}, want: gpu, wantSaw: []types.UID{"a"}},
		"after AssumedTTL":                  {queue: "ns/lq", at: t0.Add(AssumedTTL + time.Millisecond)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := New()
			e.Assume("w1", "a", Demand{Queue: "ns/lq", PodSets: gpu}, t0)
			e.Assume("w1", "b", Demand{Queue: "ns/lq", PodSets: gpu}, t0)
			e.Assume("w2", "c", Demand{Queue: "ns/lq", PodSets: gpu}, t0)
			shown := func(uid types.UID) bool {
				for _, s := range tc.shown {
					if s == uid {
						return true
					}
				}
				return false
			}
			got, saw := e.Assumed("w1", tc.queue, tc.except, tc.at, shown)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Assumed() pod sets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSaw, saw, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Assumed() shown (-want +got):\n%s", diff)
			}
		})
	}
}

// A copy Courier deleted, or that the snapshot showed, no longer counts.
func TestUnassume(t *testing.T) {
	e := New()
	e.Assume("w1", "a", Demand{Queue: "ns/lq", PodSets: []placement.PodSet{{Name: "main", Count: 1}}}, t0)
	e.Settle(Seen{Shown: []Assumption{{Cluster: "w1", Workload: "a"}}}, t0)
	if got, _ := e.Assumed("w1", "ns/lq", "", t0, nil); len(got) != 0 {
		t.Errorf("a copy the snapshot showed is still assumed: %v", got)
	}
	e.Unassume("w9", "a") // A worker with nothing assumed.
}

func TestPassedOver(t *testing.T) {
	e := New()
	e.PassOver("wl", "a", Note{Reason: "refused", Until: t0.Add(time.Minute)}, t0)
	e.PassOver("wl", "b", Note{Reason: "no namespace", Until: t0.Add(10 * time.Second)}, t0)
	e.PassOver("other", "a", Note{Reason: "foreign", Until: t0.Add(time.Minute)}, t0)
	cases := map[string]struct {
		at   time.Time
		want map[string]Note
	}{
		"both in force": {at: t0.Add(time.Second), want: map[string]Note{
			"a": {Reason: "refused", Until: t0.Add(time.Minute)}, "b": {Reason: "no namespace", Until: t0.Add(10 * time.Second)}}},
		"at the end of one, it still holds": {at: t0.Add(10 * time.Second), want: map[string]Note{
			"a": {Reason: "refused", Until: t0.Add(time.Minute)}, "b": {Reason: "no namespace", Until: t0.Add(10 * time.Second)}}},
		"one ended":  {at: t0.Add(11 * time.Second), want: map[string]Note{"a": {Reason: "refused", Until: t0.Add(time.Minute)}}},
		"both ended": {at: t0.Add(2 * time.Minute)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, e.PassedOver("wl", tc.at)); diff != "" {
				t.Errorf("PassedOver() (-want +got):\n%s", diff)
			}
		})
	}
	e.ForgetWorkload("wl")
	if got := e.PassedOver("wl", t0); got != nil {
		t.Errorf("a finished Workload's notes are kept: %v", got)
	}
}

// A worker's failed create passes it over for the namespace's jobs until
// the note ends or a create there goes through.
func TestFailing(t *testing.T) {
	note := Note{Reason: "failed", Until: t0.Add(30 * time.Second)}
	cases := map[string]struct {
		key       NamespaceKey
		at        time.Time
		recovered bool
		want      bool
	}{
		"the namespace's next job":         {key: NamespaceKey{"w1", "team-a"}, at: t0.Add(10 * time.Second), want: true},
		"another namespace's job":          {key: NamespaceKey{"w1", "team-b"}, at: t0.Add(10 * time.Second)},
		"another worker":                   {key: NamespaceKey{"w2", "team-a"}, at: t0.Add(10 * time.Second)},
		"once the note ended":              {key: NamespaceKey{"w1", "team-a"}, at: t0.Add(31 * time.Second)},
		"once a create there went through": {key: NamespaceKey{"w1", "team-a"}, at: t0.Add(10 * time.Second), recovered: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := New()
			e.Failing(NamespaceKey{"w1", "team-a"}, note, t0)
			if tc.recovered {
				e.Recovered(NamespaceKey{"w1", "team-a"})
			}
			if _, got := e.FailingNote(tc.key, tc.at); got != tc.want {
				t.Errorf("FailingNote() found = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestForwardedAndReported(t *testing.T) {
	e := New()
	e.Forwarded("copy/7/3", t0)
	if !e.WasForwarded("copy/7/3", t0.Add(ForwardTTL)) || e.WasForwarded("copy/7/3", t0.Add(ForwardTTL+time.Millisecond)) {
		t.Error("a write is remembered for other than ForwardTTL")
	}
	if e.Report("job/1/refused", t0) {
		t.Error("a first report counts as reported already")
	}
	if !e.Report("job/1/refused", t0.Add(time.Minute)) {
		t.Error("a second report does not count as reported already")
	}
}

func TestRemnants(t *testing.T) {
	key := RemnantKey{Cluster: "w1", Namespace: "ns", Name: "tj"}
	jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	e := New()
	e.Remnant(key, Remnant{Owner: "copy-1", Runner: jobSet}, t0)
	// Noted again later, the same copy keeps its time.
	e.Remnant(key, Remnant{Owner: "copy-1", Runner: jobSet}, t0.Add(RemnantTTL/2))
	if _, ok := e.RemnantOf(key, t0.Add(RemnantTTL+time.Second)); ok {
		t.Error("a remnant noted again kept the later time")
	}
	e.Remnant(key, Remnant{Owner: "copy-2", Runner: jobSet}, t0)
	e.RemnantGone(key, "copy-1")
	if r, ok := e.RemnantOf(key, t0); !ok || r.Owner != "copy-2" {
		t.Errorf("the remnant of another copy went with copy-1's: %v, %v", r, ok)
	}
	e.RemnantGone(key, "copy-2")
	if _, ok := e.RemnantOf(key, t0); ok {
		t.Error("a remnant that went is still waited for")
	}
}

func TestRounds(t *testing.T) {
	e := New()
	e.Settle(Seen{Rounds: &Rounds{Workload: "wl", At: t0}}, t0)
	e.Settle(Seen{Rounds: &Rounds{Workload: "wl", At: t0.Add(time.Minute)}}, t0.Add(time.Minute))
	if at, ok := e.RoundsStart("wl", t0.Add(time.Hour)); !ok || !at.Equal(t0) {
		t.Errorf("RoundsStart() = %v, %v, want the first start %v", at, ok, t0)
	}
	e.Settle(Seen{Rounds: &Rounds{Workload: "wl", End: true}}, t0.Add(time.Hour))
	if _, ok := e.RoundsStart("wl", t0.Add(time.Hour)); ok {
		t.Error("rounds that ended still have a start")
	}
}

// However long Courier runs, each kind of expectation holds at most its
// lifetime's writes and one sweep interval's more: here 10 minutes of one
// write a second to tables whose lifetime is a minute or two.
func TestExpectationsStayBounded(t *testing.T) {
	e := New()
	largest := map[string]int{}
	for i := range 600 {
		now := t0.Add(time.Duration(i) * time.Second)
		uid := types.UID(fmt.Sprint(i))
		e.WroteOver(uid, "1", now)
		e.Deleted(uid, now)
		e.Mirrored(uid, now)
		e.Created(CopyKey{Cluster: "w1", Kind: "Workload", Workload: uid}, uid, "1", now)
		e.Assume("w1", uid, Demand{Queue: "ns/lq"}, now)
		e.PassOver(uid, "w1", Note{Reason: "refused", Until: now.Add(time.Minute)}, now)
		for kind, n := range e.Sizes() {
			largest[kind] = max(largest[kind], n)
		}
	}
	limits := map[string]time.Duration{
		"written": 2 * WrittenTTL, "deleted": 2 * DeletedTTL, "mirrored": 2 * MirroredTTL,
		"created": CreatedKeep + CreatedTTL, "assumed": 2 * AssumedTTL, "passed_over": 2 * maxPassOver,
	}
	for kind, d := range limits {
		if limit := int(d/time.Second) + 1; largest[kind] > limit {
			t.Errorf("%s held %d entries at most, want at most %d", kind, largest[kind], limit)
		}
	}
}

// BenchmarkTablePut writes to a table holding a lifetime's worth of entries
// at 100 a second: a write costs the same however many it holds.
func BenchmarkTablePut(b *testing.B) {
	tbl := newTable[types.UID, struct{}](DeletedTTL, DeletedTTL)
	for i := range 12000 {
		tbl.put(types.UID(fmt.Sprint("pre-", i)), struct{}{}, t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	now := t0.Add(DeletedTTL)
	b.ResetTimer()
	for i := range b.N {
		tbl.put(types.UID(fmt.Sprint(i)), struct{}{}, now)
	}
}

// What a deleted copy may leave runs its pods: a TrainJob's JobSet and
// pods, a Job's pods; a finished copy's pods are done, and a kind whose
// pods Courier cannot name leaves nothing to wait for.
func TestNewRemnant(t *testing.T) {
	jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	key := RemnantKey{Cluster: "w1", Namespace: "ns", Name: "job"}
	cases := map[string]struct {
		a        adapter.Adapter
		finished bool
		want     *RemnantNote
	}{
		"a running TrainJob leaves its JobSet and its pods": {
			a:    adapter.NewTrainJob(),
			want: &RemnantNote{Key: key, Remnant: Remnant{Owner: "copy-uid", Runner: jobSet, PodLabel: "jobset.sigs.k8s.io/jobset-name"}},
		},
		"a finished TrainJob leaves nothing to wait for": {
			a:        adapter.NewTrainJob(),
			finished: true,
		},
		"a running batch Job leaves its pods": {
			a:    adapter.New(adapter.Kind{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}}),
			want: &RemnantNote{Key: key, Remnant: Remnant{Owner: "copy-uid", PodLabel: "batch.kubernetes.io/job-name"}},
		},
		"a kind whose pods carry no label Courier knows leaves nothing it can wait for": {
			a: adapter.New(adapter.Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			copy := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.finished {
				copy.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
			}
			copy.SetNamespace("ns")
			copy.SetName("job")
			copy.SetUID("copy-uid")
			var got *RemnantNote
			if n, ok := NewRemnant("w1", tc.a, copy); ok {
				got = &n
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NewRemnant() (-want +got):\n%s", diff)
			}
		})
	}
}

// A create whose outcome the worker could not tell (a server error) counts
// as there for CreatedTTL, in case it committed, and no longer.
func TestAnUncertainCreateCountsForCreatedTTL(t *testing.T) {
	key := CopyKey{Cluster: "w1", Kind: "TrainJob", Workload: "wl"}
	e := New()
	e.Created(key, "", "", t0)
	reached := func(string) bool { return true }
	for at, want := range map[time.Time]bool{t0.Add(time.Second): true, t0.Add(CreatedTTL): true, t0.Add(CreatedTTL + time.Second): false} {
		c, ok := e.CreatedCopy(key, at)
		if got := ok && e.StillUnseen(c, at, reached); got != want {
			t.Errorf("at %s: still unseen = %v, want %v", at.Sub(t0), got, want)
		}
	}
}

func TestGateOpened(t *testing.T) {
	e := New()
	e.GateOpened("copy", t0)
	if at, ok := e.GateOpenedAt("copy", t0.Add(GateTTL)); !ok || !at.Equal(t0) {
		t.Errorf("GateOpenedAt within GateTTL = %v, %v; want %v, true", at, ok, t0)
	}
	if _, ok := e.GateOpenedAt("copy", t0.Add(GateTTL+time.Millisecond)); ok {
		t.Error("a gate opened is remembered past GateTTL")
	}
	if _, ok := e.GateOpenedAt("other", t0); ok {
		t.Error("a gate Courier did not open counts as opened")
	}
}

func TestLeaving(t *testing.T) {
	e := New()
	e.Deleted("job-copy", t0)
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		at   time.Time
		want bool
	}{
		"a copy Courier deleted":                        {obj: remoteObj("job-copy", ""), at: t0.Add(time.Second), want: true},
		"a Workload copy its deleted job copy controls": {obj: remoteObj("wl-copy", "job-copy"), at: t0.Add(time.Second), want: true},
		"a copy Courier did not delete":                 {obj: remoteObj("other", "")},
		"a copy deleted longer ago than DeletedTTL":     {obj: remoteObj("job-copy", ""), at: t0.Add(DeletedTTL + time.Second)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := e.Leaving(tc.obj, tc.at); got != tc.want {
				t.Errorf("Leaving() = %v, want %v", got, tc.want)
			}
		})
	}
}

// remoteObj is a remote object of UID uid, controlled by the object of UID
// owner if owner is not "".
func remoteObj(uid, owner string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetUID(types.UID(uid))
	if owner != "" {
		u.SetOwnerReferences([]metav1.OwnerReference{{Kind: "TrainJob", Name: "job", UID: types.UID(owner), Controller: ptr.To(true)}})
	}
	return u
}
