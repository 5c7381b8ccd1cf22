package soak

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A link fault picks the worker whose job will outlive it, among those it
// may take.
func TestAwaitRunnerPicksAJobThatOutlivesTheFault(t *testing.T) {
	r := newRecorder()
	now := time.Now()
	for name, pod := range map[string]*PodRun{
		"short":    {Worker: "w1", Pod: "a", Running: now.Add(-10 * time.Second)},
		"long":     {Worker: "w2", Pod: "b", Running: now.Add(-10 * time.Second)},
		"longest":  {Worker: "w3", Pod: "c", Running: now.Add(-10 * time.Second)},
		"finished": {Worker: "w1", Pod: "d", Running: now.Add(-20 * time.Second), Ended: now},
	} {
		r.expect(JobSpec{Name: name, RunFor: map[string]time.Duration{"short": 30 * time.Second, "long": 3 * time.Minute,
			"longest": 4 * time.Minute, "finished": time.Hour}[name]})
		r.update(name, func(j *Job) { j.Pods = []*PodRun{pod} })
	}
	in := &injector{rec: r}
	cases := map[string]struct {
		// taken are the workers whose lock another fault holds.
		taken      map[string]bool
		wantWorker string
		wantJob    string
	}{
		"the longest":                      {wantWorker: "w3", wantJob: "longest"},
		"the next when the first is taken": {taken: map[string]bool{"w3": true}, wantWorker: "w2", wantJob: "long"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := in.awaitRunner(context.Background(), []string{"w1", "w2", "w3"}, time.Minute, func(r runner) bool { return !tc.taken[r.worker] })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantWorker, tc.wantJob}, []string{got.worker, got.job}); diff != "" {
				t.Errorf("picked (-want +got):\n%s", diff)
			}
			if got.left < time.Minute {
				t.Errorf("picked a job with %s left, want a minute or more", got.left)
			}
		})
	}
}

// cut-off-all and restart-after-down begin only once no worker has been
// counted disconnected for settleAfter.
func TestSettledAt(t *testing.T) {
	now := time.Now()
	cases := map[string]struct {
		ds   []Disconnection
		want bool
	}{
		"never disconnected": {want: true},
		"reconnected long ago": {
			ds:   []Disconnection{{Worker: "w1", Since: now.Add(-3 * time.Minute), Cleared: now.Add(-settleAfter - time.Second)}},
			want: true,
		},
		"still disconnected": {
			ds: []Disconnection{
				{Worker: "w1", Since: now.Add(-3 * time.Minute), Cleared: now.Add(-2 * time.Minute)},
				{Worker: "w2", Since: now.Add(-time.Minute)},
			},
		},
		"reconnected just now": {
			ds: []Disconnection{{Worker: "w1", Since: now.Add(-2 * time.Minute), Cleared: now.Add(-5 * time.Second)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := settledAt(tc.ds, now); got != tc.want {
				t.Errorf("settledAt = %t, want %t", got, tc.want)
			}
		})
	}
}

// cut-off-all waits for a job that outlives it on every worker.
func TestEveryWorkerRuns(t *testing.T) {
	workers := []string{"w1", "w2"}
	cases := map[string]struct {
		runners []runner
		want    bool
	}{
		"nothing runs": {},
		"one worker runs a long job": {
			runners: []runner{{worker: "w1", left: 5 * time.Minute}},
		},
		"both run, one job too short": {
			runners: []runner{{worker: "w1", left: 5 * time.Minute}, {worker: "w2", left: 30 * time.Second}},
		},
		"both run a long job": {
			runners: []runner{{worker: "w1", left: 5 * time.Minute}, {worker: "w2", left: 30 * time.Second}, {worker: "w2", left: 3 * time.Minute}},
			want:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := everyWorkerRuns(tc.runners, workers, time.Minute); got != tc.want {
				t.Errorf("everyWorkerRuns = %t, want %t", got, tc.want)
			}
		})
	}
}
