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
