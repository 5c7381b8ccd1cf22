package benchstack

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestSummarizeJobs(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	on := func(workers ...string) map[string]map[types.UID]bool {
		out := map[string]map[types.UID]bool{}
		for _, w := range workers {
			out[w] = map[types.UID]bool{"u": true}
		}
		return out
	}
	type want struct {
		Throughput, ThroughputSeconds          float64
		QuotaToReady, ReadyToComplete          benchreport.Percentiles
		QuotaToWorkerQuota, QuotaToJobOnWorker benchreport.Percentiles
		Finished                               map[string]int
		Unfinished                             []string
		Invariants                             Invariants
		Samples                                Samples
	}
	cases := map[string]struct {
		jobs []phaseJob
		want want
	}{
		"throughput from the first quota reserved to the last check Ready": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(1), workerQuota: at(1.25), onWorker: at(1.5), checkReady: at(2), final: at(4), finished: at(4), reason: "Succeeded", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(2), workerQuota: at(3), onWorker: at(4), checkReady: at(5), final: at(6), finished: at(6), reason: "Succeeded", copies: on("w2")},
			},
			want: want{Throughput: 0.5, ThroughputSeconds: 4,
				QuotaToReady:       benchreport.Percentiles{P50: 1, P95: 3, P99: 3, Max: 3},
				ReadyToComplete:    benchreport.Percentiles{P50: 1, P95: 2, P99: 2, Max: 2},
				QuotaToWorkerQuota: benchreport.Percentiles{P50: 0.25, P95: 1, P99: 1, Max: 1},
				QuotaToJobOnWorker: benchreport.Percentiles{P50: 0.5, P95: 2, P99: 2, Max: 2},
				Finished:           map[string]int{"Succeeded": 2},
				Invariants:         Invariants{FinishedNeverReady: []string{}, FinalStatusMissing: []string{}, OnTwoWorkers: []string{}},
				Samples:            Samples{QuotaToReady: []float64{1, 3}, ReadyAt: []float64{1, 4}}},
		},
		"a step seen before the one it follows takes no time; one never seen is left out": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(2), workerQuota: at(1.5), checkReady: at(4), final: at(5), finished: at(5), reason: "Succeeded", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(2), workerQuota: at(3), onWorker: at(3.5), checkReady: at(4), final: at(5), finished: at(5), reason: "Succeeded", copies: on("w1")},
			},
			want: want{Throughput: 1, ThroughputSeconds: 2,
				QuotaToReady:       benchreport.Percentiles{P50: 2, P95: 2, P99: 2, Max: 2},
				ReadyToComplete:    benchreport.Percentiles{P50: 1, P95: 1, P99: 1, Max: 1},
				QuotaToWorkerQuota: benchreport.Percentiles{P50: 0, P95: 1, P99: 1, Max: 1},
				QuotaToJobOnWorker: benchreport.Percentiles{P50: 1.5, P95: 1.5, P99: 1.5, Max: 1.5},
				Finished:           map[string]int{"Succeeded": 2},
				Invariants:         Invariants{FinishedNeverReady: []string{}, FinalStatusMissing: []string{}, OnTwoWorkers: []string{}},
				Samples:            Samples{QuotaToReady: []float64{2, 2}, ReadyAt: []float64{2, 2}}},
		},
		"a job not finished in time is unfinished, not without its final status": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(1), checkReady: at(2), finished: at(3), final: at(3), reason: "Succeeded", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(1), checkReady: at(2), copies: on("w1")},
			},
			want: want{Throughput: 2, ThroughputSeconds: 1,
				QuotaToReady:    benchreport.Percentiles{P50: 1, P95: 1, P99: 1, Max: 1},
				ReadyToComplete: benchreport.Percentiles{P50: 1, P95: 1, P99: 1, Max: 1},
				Finished:        map[string]int{"Succeeded": 1},
				Unfinished:      []string{"b"},
				Invariants:      Invariants{FinishedNeverReady: []string{}, FinalStatusMissing: []string{}, OnTwoWorkers: []string{}},
				Samples:         Samples{QuotaToReady: []float64{1, 1}, ReadyAt: []float64{1, 1}}},
		},
		"each invariant broken once": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(1), finished: at(3), final: at(3), reason: "Failed", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(1), checkReady: at(2), finished: at(3), reason: "Succeeded", copies: on("w1", "w2")},
			},
			want: want{Throughput: 1, ThroughputSeconds: 1,
				QuotaToReady: benchreport.Percentiles{P50: 1, P95: 1, P99: 1, Max: 1},
				Finished:     map[string]int{"Failed": 1, "Succeeded": 1},
				Invariants:   Invariants{FinishedNeverReady: []string{"a"}, FinalStatusMissing: []string{"b"}, OnTwoWorkers: []string{"b"}},
				Samples:      Samples{QuotaToReady: []float64{1}, ReadyAt: []float64{1}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := &PhaseResult{}
			summarizeJobs(res, []string{"a", "b"}, tc.jobs)
			got := want{res.Throughput, res.ThroughputSeconds, res.QuotaToReady, res.ReadyToComplete,
				res.QuotaToWorkerQuota, res.QuotaToJobOnWorker, res.Finished, res.Unfinished, res.Invariants, res.Samples}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
