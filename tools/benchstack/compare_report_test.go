package benchstack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestDescribeSteps(t *testing.T) {
	cases := map[string]struct {
		phase PhaseResult
		want  string
	}{
		"each step from quota reserved, in the order the job takes them": {
			phase: PhaseResult{
				QuotaToWorkerQuota: benchreport.Percentiles{P50: 0.07, P95: 0.21},
				QuotaToJobOnWorker: benchreport.Percentiles{P50: 0.16, P95: 0.34},
				QuotaToReady:       benchreport.Percentiles{P50: 0.25, P95: 0.44},
			},
			want: "worker's quota 0.07 / 0.21, job on a worker 0.16 / 0.34, check Ready 0.25 / 0.44",
		},
		"results from before the steps were measured": {
			phase: PhaseResult{QuotaToReady: benchreport.Percentiles{P50: 0.25, P95: 0.44}},
			want:  "not measured",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, describeSteps(tc.phase)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteSummary(t *testing.T) {
	c := &Comparison{
		Command:  "courier-bench compare --smoke",
		Started:  time.Date(2026, 11, 26, 8, 56, 33, 0, time.UTC),
		Machine:  Machine{CPUs: 2, Model: "AMD EPYC", MemoryGi: 23, Kernel: "6.18.0"},
		Versions: map[string]string{"kueue": "kueue-v0.19.1", "courier": "6d35391"},
		Phases: []PhaseResult{{
			System: SystemCourier, SystemLabel: "Courier", Load: "burst-40", Kind: "TrainJobs", Jobs: 40,
			Throughput: 2.19, QuotaToReady: benchreport.Percentiles{P50: 2.9, P95: 5.6, P99: 6.6},
		}},
	}
	path := filepath.Join(t.TempDir(), "compare-20261126-085633.txt")
	if err := writeSummary(path, c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	wantHeader := []string{
		"courier-bench compare, started 2026-11-26T08:56:33Z",
		"command: courier-bench compare --smoke",
		"machine: 2 CPUs, AMD EPYC, 23 GiB, Linux 6.18.0",
		"versions: courier 6d35391, kueue kueue-v0.19.1",
		"",
		"== burst-40: 40 TrainJobs at once ==",
	}
	if diff := cmp.Diff(wantHeader, lines[:len(wantHeader)]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	var printed strings.Builder
	if err := printComparison(&printed, c); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), printed.String()) {
		t.Errorf("the summary does not end with what the comparison prints:\n%s", data)
	}
}
