package benchstack

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
	pct := func(p50, p95, p99, maxOf float64) benchreport.Percentiles {
		return benchreport.Percentiles{P50: p50, P95: p95, P99: p99, Max: maxOf}
	}
	type want struct {
		Throughput, ThroughputSeconds, ReadyThroughput   float64
		SubmitToReady, SubmitToRunning, SubmitToComplete benchreport.Percentiles
		QuotaToReady                                     benchreport.Percentiles
		QuotaToWorkerQuota, QuotaToJobOnWorker           benchreport.Percentiles
		Finished                                         map[string]int
		Unfinished                                       []string
		Invariants                                       Invariants
		Samples                                          Samples
	}
	none := Invariants{FinishedNeverReady: []string{}, FinalStatusMissing: []string{}, OnTwoWorkers: []string{}}
	cases := map[string]struct {
		jobs []phaseJob
		want want
	}{
		"latency from submission, the queueing included; throughput from the first submission to the last complete": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(1), workerQuota: at(1.25), onWorker: at(1.5), running: at(1.75), checkReady: at(2), final: at(4), finished: at(4), reason: "Succeeded", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(2), workerQuota: at(3), onWorker: at(4), running: at(4.5), checkReady: at(5), final: at(8), finished: at(8), reason: "Succeeded", copies: on("w2")},
			},
			want: want{Throughput: 0.25, ThroughputSeconds: 8, ReadyThroughput: 0.5,
				SubmitToReady:      pct(2, 5, 5, 5),
				SubmitToRunning:    pct(1.75, 4.5, 4.5, 4.5),
				SubmitToComplete:   pct(4, 8, 8, 8),
				QuotaToReady:       pct(1, 3, 3, 3),
				QuotaToWorkerQuota: pct(0.25, 1, 1, 1),
				QuotaToJobOnWorker: pct(0.5, 2, 2, 2),
				Finished:           map[string]int{"Succeeded": 2},
				Invariants:         none,
				Samples:            Samples{SubmitToReady: []float64{2, 5}, SubmitToComplete: []float64{4, 8}, QuotaToReady: []float64{1, 3}, CompleteAt: []float64{4, 8}}},
		},
		"a step seen before the one it follows takes no time; one never seen is left out": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(2), workerQuota: at(1.5), checkReady: at(4), final: at(5), finished: at(5), reason: "Succeeded", copies: on("w1")},
				{submitted: at(1), quotaReserved: at(2), workerQuota: at(3), onWorker: at(3.5), running: at(3.5), checkReady: at(4), final: at(5), finished: at(5), reason: "Succeeded", copies: on("w1")},
			},
			want: want{Throughput: 0.4, ThroughputSeconds: 5, ReadyThroughput: 1,
				SubmitToReady:      pct(3, 4, 4, 4),
				SubmitToRunning:    pct(2.5, 2.5, 2.5, 2.5),
				SubmitToComplete:   pct(4, 5, 5, 5),
				QuotaToReady:       pct(2, 2, 2, 2),
				QuotaToWorkerQuota: pct(0, 1, 1, 1),
				QuotaToJobOnWorker: pct(1.5, 1.5, 1.5, 1.5),
				Finished:           map[string]int{"Succeeded": 2},
				Invariants:         none,
				Samples:            Samples{SubmitToReady: []float64{3, 4}, SubmitToComplete: []float64{4, 5}, QuotaToReady: []float64{2, 2}, CompleteAt: []float64{5, 5}}},
		},
		"a job not finished in time is unfinished, not without its final status": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(1), checkReady: at(2), finished: at(3), final: at(3), reason: "Succeeded", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(1), checkReady: at(2), copies: on("w1")},
			},
			want: want{Throughput: 1.0 / 3, ThroughputSeconds: 3, ReadyThroughput: 2,
				SubmitToReady:    pct(2, 2, 2, 2),
				SubmitToComplete: pct(3, 3, 3, 3),
				QuotaToReady:     pct(1, 1, 1, 1),
				Finished:         map[string]int{"Succeeded": 1},
				Unfinished:       []string{"b"},
				Invariants:       none,
				Samples:          Samples{SubmitToReady: []float64{2, 2}, SubmitToComplete: []float64{3}, QuotaToReady: []float64{1, 1}, CompleteAt: []float64{3}}},
		},
		"each invariant broken once": {
			jobs: []phaseJob{
				{submitted: at(0), quotaReserved: at(1), finished: at(3), final: at(3), reason: "Failed", copies: on("w1")},
				{submitted: at(0), quotaReserved: at(1), checkReady: at(2), finished: at(3), reason: "Succeeded", copies: on("w1", "w2")},
			},
			want: want{Throughput: 1.0 / 3, ThroughputSeconds: 3, ReadyThroughput: 1,
				SubmitToReady:    pct(2, 2, 2, 2),
				SubmitToComplete: pct(3, 3, 3, 3),
				QuotaToReady:     pct(1, 1, 1, 1),
				Finished:         map[string]int{"Failed": 1, "Succeeded": 1},
				Invariants:       Invariants{FinishedNeverReady: []string{"a"}, FinalStatusMissing: []string{"b"}, OnTwoWorkers: []string{"b"}},
				Samples:          Samples{SubmitToReady: []float64{2}, SubmitToComplete: []float64{3}, QuotaToReady: []float64{1}, CompleteAt: []float64{3}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := &PhaseResult{}
			summarizeJobs(res, []string{"a", "b"}, tc.jobs)
			got := want{res.Throughput, res.ThroughputSeconds, res.ReadyThroughput, res.SubmitToReady, res.SubmitToRunning, res.SubmitToComplete,
				res.QuotaToReady, res.QuotaToWorkerQuota, res.QuotaToJobOnWorker, res.Finished, res.Unfinished, res.Invariants, res.Samples}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
