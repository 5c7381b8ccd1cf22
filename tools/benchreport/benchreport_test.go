package benchreport

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentilesOf(t *testing.T) {
	seconds := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Second)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i
	}
	cases := map[string]struct {
		in   []time.Duration
		want Percentiles
	}{
		"none":       {want: Percentiles{}},
		"one":        {in: seconds(3), want: Percentiles{P50: 3, P95: 3, P99: 3, Max: 3}},
		"unsorted":   {in: seconds(4, 1, 3, 2), want: Percentiles{P50: 2, P95: 4, P99: 4, Max: 4}},
		"1 to 100 s": {in: seconds(hundred...), want: Percentiles{P50: 50, P95: 95, P99: 99, Max: 100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PercentilesOf(tc.in)); diff != "" {
				t.Errorf("PercentilesOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	if diff := cmp.Diff(Verdict{Status: "PASS", Target: "t", Detail: "d"}, Check(true, "t", "d")); diff != "" {
		t.Errorf("Check(true) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Verdict{Status: "FAIL", Target: "t", Detail: "d"}, Check(false, "t", "d")); diff != "" {
		t.Errorf("Check(false) (-want +got):\n%s", diff)
	}
}

func TestCPUShares(t *testing.T) {
	cases := map[string]struct {
		seconds map[string]float64
		want    []ProcessCPU
	}{
		"largest first, of the machine and of the stack": {
			seconds: map[string]float64{"kueue": 2, "apiserver": 6, "idle": 0},
			want: []ProcessCPU{
				{Name: "apiserver", CPUSeconds: 6, Machine: 0.3, Stack: 0.75},
				{Name: "kueue", CPUSeconds: 2, Machine: 0.1, Stack: 0.25},
				{Name: "idle"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CPUShares(tc.seconds, 10, 2)); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
}
