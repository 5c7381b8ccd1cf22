package benchstack

import (
	"context"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/localcluster"
)

func TestSideProcesses(t *testing.T) {
	env := &localcluster.Env{Manager: "manager", Workers: []string{"worker-1", "worker-2"}}
	workers := []string{"worker-1/kube-apiserver", "worker-1/etcd", "worker-2/kube-apiserver", "worker-2/etcd"}
	cases := map[string]struct {
		system      string
		wantManager []string
	}{
		"Courier: Courier and the manager's Kueue, which admits, with the API server and etcd": {
			system:      SystemCourier,
			wantManager: []string{"manager/courier", "manager/etcd", "manager/kube-apiserver", "manager/kueue"},
		},
		"the baseline: Courier as another build, on the same side": {
			system:      SystemBaseline,
			wantManager: []string{"manager/courier", "manager/etcd", "manager/kube-apiserver", "manager/kueue"},
		},
		"MultiKueue: the manager's Kueue, which admits and dispatches, without the idle Courier": {
			system:      SystemMultiKueue,
			wantManager: []string{"manager/etcd", "manager/kube-apiserver", "manager/kueue"},
		},
		"the faster MultiKueue alike": {
			system:      SystemMultiKueueQPS,
			wantManager: []string{"manager/etcd", "manager/kube-apiserver", "manager/kueue"},
		},
		"the floor: no dispatcher's process, the manager's Kueue, API server and etcd": {
			system:      SystemFloor,
			wantManager: []string{"manager/etcd", "manager/kube-apiserver", "manager/kueue"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			manager, worker := sideProcesses(Systems[tc.system], env)
			if diff := cmp.Diff(tc.wantManager, manager); diff != "" {
				t.Errorf("manager side (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(workers, worker); diff != "" {
				t.Errorf("worker side (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSideCost(t *testing.T) {
	seconds := map[string]float64{"manager/courier": 2, "manager/kueue": 3, "manager/kube-apiserver": 10, "manager/etcd": 1, "worker-1/kube-apiserver": 99}
	cases := map[string]struct {
		names       []string
		peak, start uint64
		jobs        int
		want        SideCost
	}{
		"the side's processes summed, per job": {
			names: []string{"manager/courier", "manager/etcd", "manager/kube-apiserver", "manager/kueue"}, peak: 512 * 1024, start: 412 * 1024, jobs: 100,
			want: SideCost{Processes: []string{"manager/courier", "manager/etcd", "manager/kube-apiserver", "manager/kueue"},
				CPUSeconds: 16, CPUMsPerJob: 160, PeakRSSMiB: 512, GrowthKiBPerJob: 1024},
		},
		"memory that fell is no growth": {
			names: []string{"manager/kueue"}, peak: 100, start: 200, jobs: 10,
			want: SideCost{Processes: []string{"manager/kueue"}, CPUSeconds: 3, CPUMsPerJob: 300, PeakRSSMiB: 100.0 / 1024},
		},
		"no jobs": {
			names: []string{"manager/kueue"}, peak: 1024, start: 0,
			want: SideCost{Processes: []string{"manager/kueue"}, CPUSeconds: 3, PeakRSSMiB: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sideCost(tc.names, seconds, tc.peak, tc.start, tc.jobs)); diff != "" {
				t.Errorf("side cost (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAboveRest(t *testing.T) {
	cases := map[string]struct {
		cpuSeconds, cores, wall float64
		jobs                    int
		want                    RestCost
	}{
		"the rest over the window taken off, per job":        {cpuSeconds: 30, cores: 0.5, wall: 20, jobs: 10, want: RestCost{Cores: 0.5, AboveMsPerJob: 2000}},
		"a phase that cost less than its rest is 0 above it": {cpuSeconds: 5, cores: 0.5, wall: 20, jobs: 10, want: RestCost{Cores: 0.5}},
		"no jobs":         {cpuSeconds: 30, cores: 0.5, wall: 20, want: RestCost{Cores: 0.5}},
		"nothing at rest": {cpuSeconds: 30, wall: 20, jobs: 10, want: RestCost{AboveMsPerJob: 3000}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := aboveRest(SideCost{CPUSeconds: tc.cpuSeconds}, tc.cores, tc.wall, tc.jobs)
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("above rest (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMeasureRest measures this test's own process while one of its
// goroutines keeps a core busy, and one with no process behind it.
func TestMeasureRest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		x := 1.0
		for ctx.Err() == nil {
			x = math.Sqrt(x + 1)
		}
		_ = x
	}()
	procs := map[string]int{"manager/self": os.Getpid()}
	cores, err := measureRest(ctx, procs, map[string][]string{sideManager: {"manager/self"}}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if c := cores[sideManager]; c < 0.1 || c > float64(runtime.NumCPU())+0.5 {
		t.Errorf("a busy goroutine measured at %.2f cores, want between 0.1 and the machine's %d", c, runtime.NumCPU())
	}
	procs["worker-1/gone"] = 1 << 30
	if _, err := measureRest(ctx, procs, map[string][]string{sideWorker: {"worker-1/gone"}}, time.Millisecond); err == nil || !strings.Contains(err.Error(), "worker-1/gone") {
		t.Errorf("measureRest() of a process that is not there = %v, want an error naming it", err)
	}
}

func TestLoadAverage(t *testing.T) {
	v, err := parseLoadAverage("7.77 7.60 13.60 3/512 12345\n")
	if err != nil || v != 7.77 {
		t.Errorf("parsed %v, %v; want 7.77", v, err)
	}
	if _, err := parseLoadAverage(""); err == nil {
		t.Error("parsed an empty load average")
	}
	if diff := cmp.Diff(LoadAverage{Mean: 2, Max: 3}, summarizeLoad([]float64{1, 2, 3})); diff != "" {
		t.Errorf("load (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(LoadAverage{}, summarizeLoad(nil)); diff != "" {
		t.Errorf("no samples (-want +got):\n%s", diff)
	}
}
