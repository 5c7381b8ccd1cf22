package soak

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCheckOverlaps(t *testing.T) {
	cases := map[string]struct {
		pods []*PodRun
		want *Overlap
	}{
		"one pod": {
			pods: []*PodRun{{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10), Outcome: "Succeeded"}},
		},
		"moved after its first pod stopped": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(12), Ended: at(20), Outcome: "Succeeded"},
			},
		},
		"one stops the moment the other starts": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(10), Ended: at(20), Outcome: "Succeeded"},
			},
		},
		"two pods on one worker at once are one worker": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10)},
				{Worker: "w1", Pod: "p2", Running: at(5), Ended: at(20)},
			},
		},
		"a pod never seen running did not run": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Created: at(1), Ended: at(30), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(5), Ended: at(20)},
			},
		},
		"pods running on two workers at once": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(20), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(15), Ended: at(30), Outcome: "Succeeded"},
			},
			want: &Overlap{Job: "j", Workers: []string{"w1", "w2"}, For: 5 * time.Second, From: at(15), To: at(20)},
		},
		"a pod never seen to stop runs to the end": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(1)},
				{Worker: "w2", Pod: "p2", Running: at(60), Ended: at(80)},
			},
			want: &Overlap{Job: "j", Workers: []string{"w1", "w2"}, For: 20 * time.Second, From: at(60), To: at(80)},
		},
		// A partitioned worker runs its job on while it starts again
		// elsewhere, twice.
		"two overlaps count together": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(50), Outcome: "Succeeded"},
				{Worker: "w2", Pod: "p2", Running: at(10), Ended: at(20), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p3", Running: at(40), Ended: at(60), Outcome: "Succeeded"},
			},
			want: &Overlap{Job: "j", Workers: []string{"w1", "w2"}, For: 20 * time.Second, From: at(10), To: at(50)},
		},
		"three workers": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(30)},
				{Worker: "w2", Pod: "p2", Running: at(10), Ended: at(40)},
				{Worker: "w3", Pod: "p3", Running: at(20), Ended: at(25)},
			},
			want: &Overlap{Job: "j", Workers: []string{"w1", "w2", "w3"}, For: 20 * time.Second, From: at(10), To: at(30)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobs := []Job{{JobSpec: JobSpec{Name: "j"}, Pods: tc.pods}}
			offenders, unpromised, overlaps := checkOverlaps(jobs, at(100), nil, "Fenced", time.Minute)
			var want []Overlap
			if tc.want != nil {
				want = []Overlap{*tc.want}
			}
			if diff := cmp.Diff(want, overlaps, cmpopts.IgnoreFields(Overlap{}, "Pods")); diff != "" {
				t.Errorf("overlaps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(len(want), len(offenders)); diff != "" {
				t.Errorf("offenders (-want +got):\n%s\n%v", diff, offenders)
			}
			if len(unpromised) > 0 {
				t.Errorf("overlaps not promised with no fault: %v", unpromised)
			}
		})
	}
}

func TestRanOn(t *testing.T) {
	j := Job{Pods: []*PodRun{
		{Worker: "w2", Pod: "p3", Running: at(40), Ended: at(60)},
		{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(10)},
		{Worker: "w1", Pod: "p2", Running: at(5), Ended: at(20)},
		{Worker: "w1", Pod: "p4", Running: at(70)},
		{Worker: "w3", Pod: "p5", Created: at(1)},
	}}
	want := []Span{
		{Worker: "w1", Start: at(0), End: at(20)},
		{Worker: "w2", Start: at(40), End: at(60)},
		{Worker: "w1", Start: at(70), End: at(100)},
	}
	if diff := cmp.Diff(want, ranOn(j, at(100))); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

func TestCheckUndisturbed(t *testing.T) {
	cutOff := &Fault{Planned: Planned{Kind: CutOffAll, Target: allWorkers}, Started: at(10), Restored: at(100)}
	restart := &Fault{Planned: Planned{Kind: RestartAfterDown, Target: "w1"}, Started: at(10), Restored: at(100)}
	cases := map[string]struct {
		fault *Fault
		other *Fault
		pods  []*PodRun
		// wantRunning counts the jobs that ran when the fault began.
		wantRunning              int
		wantRestarted, wantMoved bool
		wantOffenderMentions     []string
	}{
		"ran through": {
			fault:       cutOff,
			pods:        []*PodRun{{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(200), Outcome: "Succeeded"}},
			wantRunning: 1,
		},
		"ended as it would during the fault": {
			fault:       cutOff,
			pods:        []*PodRun{{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(50), Outcome: "Succeeded"}},
			wantRunning: 1,
		},
		"deleted during the fault and run again elsewhere": {
			fault: cutOff,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(50), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(60), Ended: at(90), Outcome: "Succeeded"},
			},
			wantRunning: 1, wantRestarted: true, wantMoved: true,
			wantOffenderMentions: []string{"restarted", "moved"},
		},
		// A job that ended while Courier could not see it, started
		// again from scratch.
		"succeeded during the fault and run again": {
			fault: cutOff,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(50), Outcome: "Succeeded"},
				{Worker: "w1", Pod: "p2", Running: at(110), Ended: at(150), Outcome: "Succeeded"},
			},
			wantRunning: 1, wantRestarted: true,
			wantOffenderMentions: []string{"restarted"},
		},
		"deleted during the fault and run again on its worker after it": {
			fault: cutOff,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(90), Outcome: "Deleted"},
				{Worker: "w1", Pod: "p2", Running: at(120), Ended: at(150), Outcome: "Succeeded"},
			},
			wantRunning: 1, wantRestarted: true,
			wantOffenderMentions: []string{"restarted"},
		},
		"started on another worker while its first pod ran on": {
			fault: cutOff,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(150), Outcome: "Succeeded"},
				{Worker: "w2", Pod: "p2", Running: at(60), Ended: at(90), Outcome: "Succeeded"},
			},
			wantRunning: 1, wantMoved: true,
			wantOffenderMentions: []string{"moved"},
		},
		"not running when the fault began": {
			fault: cutOff,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(20), Ended: at(50), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(60), Ended: at(90), Outcome: "Succeeded"},
			},
		},
		"stopped after the fault, by something else": {
			fault: cutOff,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(150), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(160), Ended: at(190), Outcome: "Succeeded"},
			},
			wantRunning: 1,
		},
		"restart-after-down judges its worker's jobs alone": {
			fault: restart,
			pods: []*PodRun{
				{Worker: "w2", Pod: "p1", Running: at(0), Ended: at(50), Outcome: "Deleted"},
				{Worker: "w3", Pod: "p2", Running: at(60), Ended: at(90), Outcome: "Succeeded"},
			},
		},
		"restart-after-down: its worker's job evicted": {
			fault: restart,
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(30), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(40), Ended: at(90), Outcome: "Succeeded"},
			},
			wantRunning: 1, wantRestarted: true, wantMoved: true,
			wantOffenderMentions: []string{"restarted", "moved"},
		},
		"a job another fault deleted on purpose is that fault's": {
			fault: cutOff,
			other: &Fault{Planned: Planned{Kind: RemoteDelete, Target: "w1"}, Started: at(5), Restored: at(6), Hit: []string{"j"}},
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(0), Ended: at(12), Outcome: "Deleted"},
				{Worker: "w2", Pod: "p2", Running: at(20), Ended: at(90), Outcome: "Succeeded"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			faults := []*Fault{tc.fault}
			if tc.other != nil {
				faults = append(faults, tc.other)
			}
			jobs := []Job{{JobSpec: JobSpec{Name: "j"}, Pods: tc.pods}}
			offenders, notes := checkUndisturbed(jobs, faults)
			if len(notes) != 1 {
				t.Fatalf("notes %v, want one for the fault", notes)
			}
			restarted, moved := 0, 0
			if tc.wantRestarted {
				restarted = 1
			}
			if tc.wantMoved {
				moved = 1
			}
			wantNote := fmt.Sprintf("%d jobs ran when it began; %d restarted, %d moved", tc.wantRunning, restarted, moved)
			if tc.wantRunning > 0 {
				wantNote += "; running then, by worker: w1 1"
			}
			if !strings.HasSuffix(notes[0], wantNote) {
				t.Errorf("note %q, want it to end with %q", notes[0], wantNote)
			}
			if diff := cmp.Diff(len(tc.wantOffenderMentions) > 0, len(offenders) > 0); diff != "" {
				t.Fatalf("offending (-want +got):\n%s\n%v", diff, offenders)
			}
			for _, m := range tc.wantOffenderMentions {
				if !strings.Contains(offenders[0], m+":") {
					t.Errorf("offender %q does not say %q", offenders[0], m)
				}
			}
		})
	}
}

func TestCheckRanAgain(t *testing.T) {
	cases := map[string]struct {
		pods []*PodRun
		want int
	}{
		"ran once": {pods: []*PodRun{{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10), Outcome: "Succeeded"}}},
		"deleted, then ran elsewhere": {pods: []*PodRun{
			{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10), Outcome: "Deleted"},
			{Worker: "w2", Pod: "p2", Running: at(20), Ended: at(30), Outcome: "Succeeded"},
		}},
		// A job that ended on a worker Courier could not see ran again.
		"succeeded, then ran elsewhere": {pods: []*PodRun{
			{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(10), Outcome: "Succeeded"},
			{Worker: "w2", Pod: "p2", Running: at(20), Ended: at(30), Outcome: "Succeeded"},
		}, want: 1},
		"two at once is an overlap, not a run again": {pods: []*PodRun{
			{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(25), Outcome: "Succeeded"},
			{Worker: "w2", Pod: "p2", Running: at(20), Ended: at(30), Outcome: "Succeeded"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkRanAgain([]Job{{JobSpec: JobSpec{Name: "j"}, Pods: tc.pods}})
			if diff := cmp.Diff(tc.want, len(got)); diff != "" {
				t.Errorf("jobs that ran again (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}
