package benchstack

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestSummarizeAndEvaluate(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	type job struct {
		copies map[string][]bool // worker -> started, one entry per copy
	}
	cases := map[string]struct {
		jobs          map[string]job
		counts        requestCounts
		wantPerWorker map[string]int
		wantTwo       []string
		wantNever     []string
		wantPer       PerWorkload
		wantStatus    []string
	}{
		"balanced, three writes and one read per job": {
			jobs: map[string]job{
				"j0": {copies: map[string][]bool{"w1": {true}}},
				"j1": {copies: map[string][]bool{"w2": {true}}},
			},
			counts: requestCounts{Requests: map[string]map[string]uint64{
				"w1": {"create": 2, "delete": 1, "get": 1, "watch": 3, "other": 9},
				"w2": {"create": 2, "delete": 1, "get": 1, "list": 2},
			}},
			wantPerWorker: map[string]int{"w1": 1, "w2": 1},
			wantPer:       PerWorkload{Total: 4, Reads: 1, Writes: 3},
			wantStatus:    []string{"PASS", "PASS", "PASS"},
		},
		"a job on two workers, one worker taking all": {
			jobs: map[string]job{
				"j0": {copies: map[string][]bool{"w1": {true}, "w2": {false}}},
				"j1": {copies: map[string][]bool{"w1": {true}}},
			},
			counts: requestCounts{Requests: map[string]map[string]uint64{
				"w1": {"create": 6, "get": 2},
				"w2": {"create": 1, "patch": 1},
			}},
			wantPerWorker: map[string]int{"w1": 2, "w2": 0},
			wantTwo:       []string{"j0"},
			wantPer:       PerWorkload{Total: 5, Reads: 1, Writes: 4},
			wantStatus:    []string{"FAIL", "FAIL", "FAIL"},
		},
		"a job that never started": {
			jobs: map[string]job{
				"j0": {copies: map[string][]bool{"w1": {false}}},
				"j1": {copies: map[string][]bool{"w2": {true}}},
			},
			wantPerWorker: map[string]int{"w1": 0, "w2": 1},
			wantNever:     []string{"j0"},
			wantStatus:    []string{"FAIL", "PASS", "PASS"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTracker("j")
			var names []string
			for i, n := range []string{"j0", "j1"} {
				names = append(names, n)
				tr.submitted(n, start.Add(time.Duration(i)*time.Second))
				j := tr.job(n)
				j.finished, j.reason = start.Add(time.Duration(10+i)*time.Second), "Succeeded"
				for w, started := range tc.jobs[n].copies {
					j.copies[w] = map[types.UID]*copyRecord{}
					for k, s := range started {
						j.copies[w][types.UID(string(rune('a'+k)))] = &copyRecord{started: s, deleted: true}
					}
				}
			}
			res := &Result{Jobs: len(names), Workers: []string{"w1", "w2"}}
			summarize(res, tr, names, tc.counts)
			if diff := cmp.Diff(tc.wantPerWorker, res.Placement.PerWorker); diff != "" {
				t.Errorf("jobs per worker (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTwo, res.Placement.OnTwoWorkers); diff != "" {
				t.Errorf("jobs on two workers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNever, res.Placement.NeverStarted); diff != "" {
				t.Errorf("jobs never started (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPer, res.Requests.PerWorkload); diff != "" {
				t.Errorf("requests per workload (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(benchreport.Percentiles{P50: 10, P95: 10, P99: 10, Max: 10}, res.Latency); diff != "" {
				t.Errorf("latency (-want +got):\n%s", diff)
			}
			var got []string
			for _, v := range evaluate(res) {
				got = append(got, v.Status)
			}
			if diff := cmp.Diff(tc.wantStatus, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestCountsSince(t *testing.T) {
	before := requestCounts{
		Requests: map[string]map[string]uint64{"w1": {"get": 5, "create": 2}, "gone": {"get": 9}},
		Errors:   map[string]map[string]uint64{},
	}
	after := requestCounts{
		Requests: map[string]map[string]uint64{"w1": {"get": 7, "create": 2, "delete": 1}, "w2": {"create": 3}},
		Errors:   map[string]map[string]uint64{"w2": {"create 503": 1}},
	}
	want := requestCounts{
		Requests: map[string]map[string]uint64{"w1": {"get": 2, "delete": 1}, "w2": {"create": 3}},
		Errors:   map[string]map[string]uint64{"w2": {"create 503": 1}},
	}
	if diff := cmp.Diff(want, after.since(before)); diff != "" {
		t.Errorf("since (-want +got):\n%s", diff)
	}
}
