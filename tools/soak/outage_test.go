package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// An overlap is outside the Fenced policy's promise only on a worker whose
// own API server was down longer than workerLostTimeout during it.
func TestUnpromisedBy(t *testing.T) {
	const lost = 95 * time.Second
	// The job ran on w1 from 0 and on w2 from 120 to 200: w1 ran it on
	// until 180.
	overlap := Overlap{Job: "j", Workers: []string{"w1", "w2"}, From: at(120), To: at(180), For: time.Minute}
	outage := func(k Kind, target string, from, to int) *Fault {
		return &Fault{Planned: Planned{Kind: k, Target: target}, Started: at(from), Outage: &Outage{From: at(from), To: at(to)}}
	}
	cases := map[string]struct {
		faults []*Fault
		policy string
		want   string // A part of the reason; "" for none.
	}{
		"no fault": {policy: "Fenced"},
		"the worker's API server down longer than workerLostTimeout during the overlap": {
			faults: []*Fault{outage(APIServerKill, "w1", 10, 145)},
			policy: "Fenced",
			want:   "w1's API server did not serve for 2m15s",
		},
		"a long pause ending after the overlap": {
			faults: []*Fault{outage(PauseLong, "w1", 10, 190)},
			policy: "Fenced",
			want:   "the overlap ended while it was down",
		},
		"down no longer than workerLostTimeout": {
			faults: []*Fault{outage(APIServerKill, "w1", 30, 125)},
			policy: "Fenced",
		},
		"down long, back moments before the overlap began, the fence not yet at work": {
			faults: []*Fault{outage(PauseLong, "w1", 0, 115)},
			policy: "Fenced",
			want:   "the overlap began 5s after it was back",
		},
		"down long, but back well before the overlap": {
			faults: []*Fault{outage(PauseLong, "w1", 0, 50)},
			policy: "Fenced",
		},
		"down long, on a worker that did not run the job": {
			faults: []*Fault{outage(PauseLong, "w3", 10, 150)},
			policy: "Fenced",
		},
		"a fault that stopped no API server": {
			faults: []*Fault{{Planned: Planned{Kind: Partition, Target: "w1"}, Started: at(10), Restored: at(150)}},
			policy: "Fenced",
		},
		"under Timeout, nothing is excused": {
			faults: []*Fault{outage(APIServerKill, "w1", 10, 145)},
			policy: "Timeout",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := unpromisedBy(overlap, tc.faults, tc.policy, lost)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("unpromisedBy = %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// The overlaps outside the promise are returned apart from the offenders.
func TestCheckOverlapsSetsUnpromisedApart(t *testing.T) {
	jobs := []Job{
		{JobSpec: JobSpec{Name: "excused"}, Pods: []*PodRun{
			{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(180), Outcome: "Succeeded"},
			{Worker: "w2", Pod: "p2", Running: at(120), Ended: at(300), Outcome: "Succeeded"},
		}},
		{JobSpec: JobSpec{Name: "offends"}, Pods: []*PodRun{
			{Worker: "w3", Pod: "p3", Running: at(0), Ended: at(100), Outcome: "Deleted"},
			{Worker: "w2", Pod: "p4", Running: at(90), Ended: at(200), Outcome: "Succeeded"},
		}},
	}
	faults := []*Fault{{Planned: Planned{Kind: APIServerKill, Target: "w1"}, Started: at(10), Outage: &Outage{From: at(10), To: at(150)}}}
	offenders, unpromised, overlaps := checkOverlaps(jobs, at(400), faults, "Fenced", 95*time.Second)
	if len(offenders) != 1 || !strings.HasPrefix(offenders[0], "offends:") {
		t.Errorf("offenders = %q, want offends alone", offenders)
	}
	if len(unpromised) != 1 || !strings.HasPrefix(unpromised[0], "excused:") {
		t.Errorf("unpromised = %q, want excused alone", unpromised)
	}
	var names []string
	for _, o := range overlaps {
		names = append(names, o.Job)
	}
	if diff := cmp.Diff([]string{"excused", "offends"}, names); diff != "" {
		t.Errorf("overlaps, longest first (-want +got):\n%s", diff)
	}
}

// A fault meant to stop an API server briefly fails when it did not.
func TestCheckShort(t *testing.T) {
	const lost = 95 * time.Second
	cases := map[string]struct {
		kind    Kind
		outage  time.Duration
		wantErr bool
	}{
		"a kill back in time":                 {kind: APIServerKill, outage: 20 * time.Second},
		"a kill that outlasted the timeout":   {kind: APIServerKill, outage: 134 * time.Second, wantErr: true},
		"a manager kill that outlasted it":    {kind: ManagerKill, outage: lost, wantErr: true},
		"a short pause that outlasted it":     {kind: PauseShort, outage: 2 * lost, wantErr: true},
		"a long pause outlasts it on purpose": {kind: PauseLong, outage: lost + 20*time.Second},
		"a fault that stops no API server":    {kind: Partition},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Fault{Planned: Planned{Kind: tc.kind, Target: "w1"}}
			if tc.outage > 0 {
				f.Outage = &Outage{From: at(0), To: at(0).Add(tc.outage)}
			}
			in := &injector{lostTimeout: lost}
			if err := in.checkShort(f); (err != nil) != tc.wantErr {
				t.Errorf("checkShort = %v, want an error: %t", err, tc.wantErr)
			}
		})
	}
}
