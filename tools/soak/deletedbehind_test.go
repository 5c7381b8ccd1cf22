package soak

import (
	"strings"
	"testing"
)

// Only a batch Job whose copy remote-delete deleted, on a worker that ran
// it during the overlap, before the overlap, is outside the promise.
func TestDeletedBehind(t *testing.T) {
	overlap := Overlap{Job: "j", Workers: []string{"w1", "w2"}, From: at(120), To: at(121)}
	deleted := func(target string, started int, hit ...string) *Fault {
		return &Fault{Planned: Planned{Kind: RemoteDelete, Target: target}, Started: at(started), Hit: hit}
	}
	cases := map[string]struct {
		kind   JobKind
		faults []*Fault
		want   string // A part of the reason; "" for none.
	}{
		"a batch Job deleted on a worker that ran it": {
			kind: BatchJob, faults: []*Fault{deleted("w1", 100, "j")},
			want: "finding 31, Courier's, open",
		},
		"a TrainJob: its JobSet is waited for": {
			kind: TrainJob, faults: []*Fault{deleted("w1", 100, "j")},
		},
		"another job deleted": {
			kind: BatchJob, faults: []*Fault{deleted("w1", 100, "k")},
		},
		"deleted on a worker that did not run it": {
			kind: BatchJob, faults: []*Fault{deleted("w3", 100, "j")},
		},
		"deleted after the overlap began": {
			kind: BatchJob, faults: []*Fault{deleted("w1", 120, "j")},
		},
		"another fault": {
			kind: BatchJob, faults: []*Fault{{Planned: Planned{Kind: RemoteEvict, Target: "w1"}, Started: at(100), Hit: []string{"j"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := deletedBehind(overlap, tc.kind, tc.faults)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("deletedBehind() = %q, want one with %q", got, tc.want)
			}
		})
	}
}
