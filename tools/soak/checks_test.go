package soak

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestCheckOverlaps(t *testing.T) {
	lostTimeout := 30 * time.Second
	cases := map[string]struct {
		copies      []*Copy
		pods        []*PodRun
		lost        []lostWindow
		wantBad     int
		wantAllowed int
	}{
		"one copy": {
			copies: []*Copy{{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Ended: at(10), Deleted: at(11)}},
		},
		"re-dispatched after the first copy was deleted": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(10)},
				{Worker: "w2", UID: "b", Created: at(12), Started: at(13), Ended: at(20)},
			},
		},
		"a copy never started does not run": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Deleted: at(30)},
				{Worker: "w2", UID: "b", Created: at(5), Started: at(6), Ended: at(20)},
			},
		},
		"two copies running at once": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(20)},
				{Worker: "w2", UID: "b", Created: at(10), Started: at(11), Ended: at(30)},
			},
			wantBad: 1,
		},
		"a copy never stopped overlaps a later one": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1)},
				{Worker: "w2", UID: "b", Created: at(10), Started: at(11), Ended: at(30)},
			},
			wantBad: 1,
		},
		"two copies on one worker, one after the other": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(20)},
				{Worker: "w1", UID: "b", Created: at(21), Started: at(22), Ended: at(30)},
			},
		},
		"pods running on two workers at once": {
			pods: []*PodRun{
				{Worker: "w1", Pod: "p1", Running: at(1), Ended: at(20)},
				{Worker: "w2", Pod: "p2", Running: at(19), Ended: at(30)},
			},
			wantBad: 1,
		},
		"overlap after workerLostTimeout of a long pause is allowed": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(70)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(60)},
			},
			lost:        []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}},
			wantAllowed: 1,
		},
		// The job went elsewhere while its worker was lost, and that copy
		// started after the worker was back.
		"a copy created while its worker was lost, started after it came back, is allowed": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(56)},
				{Worker: "w2", UID: "b", Created: at(50), Started: at(57), Ended: at(70)},
			},
			pods:        []*PodRun{{Worker: "w1", Pod: "p1", Created: at(1), Running: at(53), Ended: at(58)}},
			lost:        []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}},
			wantAllowed: 1,
		},
		// The lost worker's copy, created before it was lost, started only
		// once the worker was back, after the job's other copy, and Courier
		// removed it then.
		"a lost worker's copy that starts once it is back is the stale run": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(56), Deleted: at(57)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(60)},
			},
			pods:        []*PodRun{{Worker: "w1", Pod: "p1", Created: at(56), Running: at(56), Ended: at(57)}},
			lost:        []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}},
			wantAllowed: 1,
		},
		"a stale copy left running long after its worker came back is not": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(90)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(95)},
			},
			lost:    []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}},
			wantBad: 1,
		},
		// The worker came back and was paused again seconds later, before
		// Courier could remove the stale copy, which went once the worker
		// was back for good.
		"a stale copy removed after a second pause that began soon after the first is allowed": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(110)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(95)},
			},
			lost:        []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}, {Worker: "w1", Start: at(60), End: at(100)}},
			wantAllowed: 1,
		},
		"a stale copy that outlived a return longer than workerLostTimeout before a second pause is not": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(110)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(95)},
			},
			lost:    []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}, {Worker: "w1", Start: at(90), End: at(100)}},
			wantBad: 1,
		},
		"a second pause of another worker does not extend the time": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(110)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(95)},
			},
			lost:    []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}, {Worker: "w3", Start: at(60), End: at(100)}},
			wantBad: 1,
		},
		"a copy created after its worker came back is not": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(58)},
				{Worker: "w2", UID: "b", Created: at(56), Started: at(57), Ended: at(70)},
			},
			lost:    []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}},
			wantBad: 1,
		},
		"overlap before workerLostTimeout of a pause is not": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(70)},
				{Worker: "w2", UID: "b", Created: at(20), Started: at(21), Ended: at(60)},
			},
			lost:    []lostWindow{{Worker: "w1", Start: at(5), End: at(55)}},
			wantBad: 1,
		},
		// The lost worker's pod, first seen Running after the pause and
		// after the other worker's run began, belongs to the run its copy
		// began before.
		"a lost worker's pod seen late belongs to its copy's earlier run": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(80)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(60)},
			},
			pods:        []*PodRun{{Worker: "w1", Pod: "p1", Created: at(2), Running: at(50), Ended: at(80)}},
			lost:        []lostWindow{{Worker: "w1", Start: at(5), End: at(75)}},
			wantAllowed: 1,
		},
		"a pod of a copy deleted before the other run began still counts": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(20)},
				{Worker: "w2", UID: "b", Created: at(30), Started: at(31), Ended: at(60)},
			},
			pods:    []*PodRun{{Worker: "w1", Pod: "p1", Created: at(2), Running: at(35), Ended: at(45)}},
			wantBad: 1,
		},
		"a pod is not dated from a copy created after it": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(10)},
				{Worker: "w1", UID: "c", Created: at(40), Started: at(41), Ended: at(60)},
				{Worker: "w2", UID: "b", Created: at(12), Started: at(13), Ended: at(30)},
			},
			pods: []*PodRun{{Worker: "w1", Pod: "p1", Created: at(40), Running: at(42), Ended: at(60)}},
		},
		"a pause of another worker allows nothing": {
			copies: []*Copy{
				{Worker: "w1", UID: "a", Created: at(0), Started: at(1), Deleted: at(70)},
				{Worker: "w2", UID: "b", Created: at(40), Started: at(41), Ended: at(60)},
			},
			lost:    []lostWindow{{Worker: "w3", Start: at(5), End: at(55)}},
			wantBad: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobs := []Job{{JobSpec: JobSpec{Name: "j"}, Copies: tc.copies, Pods: tc.pods}}
			bad, allowed := checkOverlaps(jobs, tc.lost, lostTimeout, at(100))
			if diff := cmp.Diff([]int{tc.wantBad, tc.wantAllowed}, []int{len(bad), len(allowed)}); diff != "" {
				t.Errorf("offending and allowed overlaps (-want +got):\n%s\noffending: %v\nallowed: %v", diff, bad, allowed)
			}
		})
	}
}

func TestCheckStatus(t *testing.T) {
	cases := map[string]struct {
		job       Job
		want      int
		wantNotes int
	}{
		"matches its only copy": {
			job: Job{Finished: at(20), ManagerStatus: "Complete; node succeeded=1",
				Copies: []*Copy{{Worker: "w1", Created: at(1), Started: at(2), Ended: at(10), Status: "Complete; node succeeded=1"}}},
		},
		"matches the last copy, not the deleted one": {
			job: Job{Finished: at(40), ManagerStatus: "Complete; node succeeded=1",
				Copies: []*Copy{
					{Worker: "w1", Created: at(1), Started: at(2), Deleted: at(10), Status: "Running; node active=1"},
					{Worker: "w2", Created: at(12), Started: at(13), Ended: at(30), Status: "Complete; node succeeded=1"},
				}},
		},
		"differs from its copy": {
			job: Job{Finished: at(20), ManagerStatus: "Running; node active=1",
				Copies: []*Copy{{Worker: "w1", Created: at(1), Started: at(2), Ended: at(10), Status: "Complete; node succeeded=1"}}},
			want: 1,
		},
		"its copy went unseen, and the manager shows an end": {
			job: Job{Finished: at(20), ManagerStatus: "Complete; active=0 ready=0 succeeded=1 failed=0",
				Copies: []*Copy{{Worker: "w2", Created: at(1), Started: at(2), Deleted: at(25), Status: "Running; active=1 ready=1 succeeded=0 failed=0", StatusUnseen: true}}},
			wantNotes: 1,
		},
		"its copy went unseen, and the manager shows no end": {
			job: Job{Finished: at(20), ManagerStatus: "Running; active=1 ready=1 succeeded=0 failed=0",
				Copies: []*Copy{{Worker: "w2", Created: at(1), Started: at(2), Deleted: at(25), Status: "Running; active=1 ready=1 succeeded=0 failed=0", StatusUnseen: true}}},
			want: 1,
		},
		"a running copy Courier deleted, seen going": {
			job: Job{Finished: at(20), ManagerStatus: "Complete; active=0 ready=0 succeeded=1 failed=0",
				Copies: []*Copy{{Worker: "w2", Created: at(1), Started: at(2), Deleted: at(15), Status: "Running; active=1 ready=1 succeeded=0 failed=0"}}},
			want: 1,
		},
		"its copy seen only suspended, then unseen, and the manager shows an end": {
			job: Job{Finished: at(20), ManagerStatus: "Complete; active=0 ready=0 succeeded=1 failed=0",
				Copies: []*Copy{{Worker: "w2", Created: at(1), Deleted: at(25), Status: "Running; active=0 ready=0 succeeded=0 failed=0 suspended=1", StatusUnseen: true}}},
			wantNotes: 1,
		},
		"its copy seen only suspended, then unseen, and the manager shows no end": {
			job: Job{Finished: at(20), ManagerStatus: "Running; active=0 ready=0 succeeded=0 failed=0 suspended=1",
				Copies: []*Copy{{Worker: "w2", Created: at(1), Deleted: at(25), Status: "Running; active=0 ready=0 succeeded=0 failed=0 suspended=1", StatusUnseen: true}}},
			want: 1,
		},
		"its copy seen only suspended, then deleted in view": {
			job: Job{Finished: at(20), ManagerStatus: "Complete; active=0 ready=0 succeeded=1 failed=0",
				Copies: []*Copy{{Worker: "w2", Created: at(1), Deleted: at(25), Status: "Running; active=0 ready=0 succeeded=0 failed=0 suspended=1"}}},
			want: 1,
		},
		"finished with no copy seen": {
			job:  Job{Finished: at(20), ManagerStatus: "Complete"},
			want: 1,
		},
		"its copy unseen whole, its pod seen running, and the manager shows an end": {
			job: Job{Finished: at(20), ManagerStatus: "Complete; active=0 ready=0 succeeded=1 failed=0",
				Pods: []*PodRun{{Worker: "w1", Created: at(10), Running: at(10), Ended: at(11)}}},
			wantNotes: 1,
		},
		"its copy unseen whole, its pod seen running, and the manager shows no end": {
			job: Job{Finished: at(20), ManagerStatus: "Running; active=1 ready=1 succeeded=0 failed=0",
				Pods: []*PodRun{{Worker: "w1", Created: at(10), Running: at(10)}}},
			want: 1,
		},
		"its copy unseen whole, its pod seen only pending": {
			job:  Job{Finished: at(20), ManagerStatus: "Complete", Pods: []*PodRun{{Worker: "w1", Created: at(10)}}},
			want: 1,
		},
		"unfinished jobs are the lost-job check's": {
			job: Job{ManagerStatus: "Running"},
		},
		"refused at submission": {
			job: Job{Refused: "forbidden"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.job.Name = "j"
			got, notes := checkStatus([]Job{tc.job})
			if diff := cmp.Diff(tc.want, len(got)); diff != "" {
				t.Errorf("offenders (-want +got):\n%s\n%v", diff, got)
			}
			if diff := cmp.Diff(tc.wantNotes, len(notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s\n%v", diff, notes)
			}
		})
	}
}

func TestCheckWaiting(t *testing.T) {
	bound := 60 * time.Second
	cases := map[string]struct {
		job   Job
		quiet time.Time
		want  int
	}{
		"dispatched at once": {
			job:   Job{Submitted: at(100), Reserved: []time.Time{at(100)}, Finished: at(130), Copies: []*Copy{{Created: at(101), Deleted: at(131)}}},
			quiet: at(50),
		},
		"waited long for quota, on Kueue": {
			job:   Job{Submitted: at(100), Reserved: []time.Time{at(290)}, Finished: at(330), Copies: []*Copy{{Created: at(291), Deleted: at(331)}}},
			quiet: at(50),
		},
		"waited long with quota, but during the faults": {
			job:   Job{Submitted: at(0), Reserved: []time.Time{at(1)}, Finished: at(330), Copies: []*Copy{{Created: at(300), Deleted: at(331)}}},
			quiet: at(290),
		},
		"waited long with quota after the faults": {
			job:   Job{Submitted: at(100), Reserved: []time.Time{at(100)}, Finished: at(330), Copies: []*Copy{{Created: at(300), Deleted: at(331)}}},
			quiet: at(50),
			want:  1,
		},
		"reserved again after an eviction, dispatched late": {
			job: Job{Submitted: at(100), Reserved: []time.Time{at(100), at(200)}, Finished: at(400), Copies: []*Copy{
				{Created: at(101), Deleted: at(199)}, {Created: at(300), Deleted: at(401)},
			}},
			quiet: at(50),
			want:  1,
		},
		"the copy seen a second before the reservation": {
			job:   Job{Submitted: at(100), Reserved: []time.Time{at(101)}, Finished: at(130), Copies: []*Copy{{Created: at(100), Deleted: at(131)}}},
			quiet: at(50),
		},
		"reserved and never dispatched": {
			job:   Job{Submitted: at(100), Reserved: []time.Time{at(100)}},
			quiet: at(50),
			want:  1,
		},
		"still running at the end": {
			job:   Job{Submitted: at(100), Reserved: []time.Time{at(100)}, Copies: []*Copy{{Created: at(101)}}},
			quiet: at(50),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.job.Name = "j"
			got := checkWaiting([]Job{tc.job}, tc.quiet, at(500), bound)
			if diff := cmp.Diff(tc.want, len(got)); diff != "" {
				t.Errorf("offenders (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}

func TestCheckPendingChecks(t *testing.T) {
	finished := []metav1.Condition{{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue}}
	cases := map[string]struct {
		conds []metav1.Condition
		state kueue.CheckState
		want  int
	}{
		"finished, Ready":     {conds: finished, state: kueue.CheckStateReady},
		"finished, Pending":   {conds: finished, state: kueue.CheckStatePending, want: 1},
		"unfinished, Pending": {state: kueue.CheckStatePending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "wl"}}
			wl.Status.Conditions = tc.conds
			wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: "courier", State: tc.state}, {Name: "other", State: kueue.CheckStatePending}}
			got := checkPendingChecks([]kueue.Workload{wl}, "courier")
			if diff := cmp.Diff(tc.want, len(got)); diff != "" {
				t.Errorf("offenders (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}

func TestLostWindows(t *testing.T) {
	pause := &Fault{Planned: Planned{Kind: PauseLong, Target: "w1"}, Started: at(10), Restored: at(60)}
	drain := &Fault{Planned: Planned{Kind: WorkerDelete, Target: "w1"}, Started: at(10), Restored: at(60)}
	cases := map[string]struct {
		disc   []Disconnection
		faults []*Fault
		want   []lostWindow
	}{
		"a disconnection a pause explains": {
			disc:   []Disconnection{{Worker: "w1", Since: at(11), Cleared: at(62)}},
			faults: []*Fault{pause},
			want:   []lostWindow{{Worker: "w1", Start: at(10), End: at(62)}},
		},
		"still disconnected at the end": {
			disc:   []Disconnection{{Worker: "w1", Since: at(11)}},
			faults: []*Fault{pause},
			want:   []lostWindow{{Worker: "w1", Start: at(10), End: at(100)}},
		},
		"a disconnection no fault explains excuses nothing": {
			disc:   []Disconnection{{Worker: "w1", Since: at(70), Cleared: at(80)}},
			faults: []*Fault{pause},
		},
		"a disconnection of another worker": {
			disc:   []Disconnection{{Worker: "w2", Since: at(11), Cleared: at(62)}},
			faults: []*Fault{pause},
		},
		"a deleted WorkerCluster stays reachable: no excuse": {
			disc:   []Disconnection{{Worker: "w1", Since: at(11), Cleared: at(62)}},
			faults: []*Fault{drain},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := lostWindows(tc.disc, tc.faults, at(100))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lost windows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckLost(t *testing.T) {
	cases := map[string]struct {
		job  Job
		want int
	}{
		"finished Complete":                        {job: Job{Finished: at(10), Reason: "Succeeded", ManagerStatus: "Complete; node succeeded=1"}},
		"finished Failed":                          {job: Job{Finished: at(10), Reason: "Failed", ManagerStatus: "Failed; node failed=1"}},
		"never finished":                           {job: Job{Submitted: at(1), ManagerStatus: "Running"}, want: 1},
		"Workload finished, the job still Running": {job: Job{Finished: at(10), Reason: "OwnerNotFound", ManagerStatus: "Running; node active=1"}, want: 1},
		"refused at submission: it never existed":  {job: Job{Refused: "forbidden"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.job.Name = "j"
			got := checkLost([]Job{tc.job})
			if diff := cmp.Diff(tc.want, len(got)); diff != "" {
				t.Errorf("offenders (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}
