package soak

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPlanFaults(t *testing.T) {
	workers := []string{"worker-1", "worker-2", "worker-3"}
	cases := map[string]struct {
		n      int
		window time.Duration
		kinds  []Kind
		// wantLen is the number of faults planned.
		wantLen int
	}{
		"fewer than the kinds are raised to one of each": {n: 1, window: 2 * time.Minute, kinds: Kinds, wantLen: len(Kinds)},
		"one of each kind":                             {n: len(Kinds), window: 3 * time.Minute, kinds: Kinds, wantLen: len(Kinds)},
		"the full soak's 36":                           {n: 36, window: 500 * time.Second, kinds: Kinds, wantLen: 36},
		"the short soak's":                             {n: len(ShortKinds), window: 120 * time.Second, kinds: ShortKinds, wantLen: len(ShortKinds)},
		"only the kinds planned once cannot be raised": {n: 5, window: time.Minute, kinds: []Kind{CutOffAll}, wantLen: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := planFaults(14, tc.n, tc.window, workers, tc.kinds)
			if diff := cmp.Diff(tc.wantLen, len(plan)); diff != "" {
				t.Fatalf("faults planned (-want +got):\n%s", diff)
			}
			seen := map[Kind]int{}
			for i, p := range plan {
				seen[p.Kind]++
				if p.At <= 0 || p.At > tc.window {
					t.Errorf("fault %d (%s) at %s, outside (0, %s]", i, p.Kind, p.At, tc.window)
				}
				if i > 0 && p.At < plan[i-1].At {
					t.Errorf("fault %d (%s) at %s comes before fault %d at %s", i, p.Kind, p.At, i-1, plan[i-1].At)
				}
				wantWorker := workerScoped[p.Kind]
				if gotWorker := slices.Contains(workers, p.Target); gotWorker != wantWorker {
					t.Errorf("fault %d (%s) targets %q", i, p.Kind, p.Target)
				}
			}
			for _, k := range tc.kinds {
				if seen[k] == 0 {
					t.Errorf("no fault of kind %s", k)
				}
				if onlyOnce[k] && seen[k] > 1 {
					t.Errorf("%d faults of kind %s, planned once", seen[k], k)
				}
			}
			for k := range seen {
				if !slices.Contains(tc.kinds, k) {
					t.Errorf("a fault of kind %s, not asked for", k)
				}
			}
			if diff := cmp.Diff(plan, planFaults(14, tc.n, tc.window, workers, tc.kinds)); diff != "" {
				t.Errorf("one seed planned two schedules (-first +second):\n%s", diff)
			}
		})
	}
}

// The short soak that CI runs has one partition and leaves out the
// partitions that take longest.
func TestShortKinds(t *testing.T) {
	if !slices.Contains(ShortKinds, Partition) {
		t.Errorf("the short soak has no %s fault", Partition)
	}
	for _, k := range []Kind{Hang, SlowLink, CutOffAll, RestartAfterDown} {
		if slices.Contains(ShortKinds, k) {
			t.Errorf("the short soak has a %s fault", k)
		}
	}
	if diff := cmp.Diff(len(Kinds)-4, len(ShortKinds)); diff != "" {
		t.Errorf("kinds of the short soak (-want +got):\n%s", diff)
	}
}

func TestLockTargets(t *testing.T) {
	workers := []string{"worker-1", "worker-2"}
	cases := map[string]struct {
		p    Planned
		want []string
	}{
		"a worker's fault holds its worker":                  {p: Planned{Kind: RemoteDelete, Target: "worker-2"}, want: []string{"worker-2"}},
		"a partition holds the worker it picks, not planned": {p: Planned{Kind: Partition, Target: anyWorker}},
		"Courier's":              {p: Planned{Kind: CourierKill, Target: courierTarget}, want: []string{courierTarget}},
		"the manager's objects'": {p: Planned{Kind: CheckRecreate, Target: managerTarget}, want: []string{managerTarget}},
		"cut-off-all holds everything": {p: Planned{Kind: CutOffAll, Target: allWorkers},
			want: []string{courierTarget, managerTarget, "worker-1", "worker-2"}},
		"restart-after-down too": {p: Planned{Kind: RestartAfterDown, Target: "worker-1"},
			want: []string{courierTarget, managerTarget, "worker-1", "worker-2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lockTargets(tc.p, workers)); diff != "" {
				t.Errorf("locks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanJobs(t *testing.T) {
	cases := map[string]struct {
		n         int
		rate      float64
		maxRunFor time.Duration
		long      time.Duration
		wantLast  time.Duration
	}{
		"60 at 0.4/s":          {n: 60, rate: 0.4, maxRunFor: 30 * time.Second, long: 3 * time.Minute, wantLast: 147500 * time.Millisecond},
		"500 at 1/s":           {n: 500, rate: 1, maxRunFor: time.Minute, long: 3 * time.Minute, wantLast: 499 * time.Second},
		"one job only":         {n: 1, rate: 2, maxRunFor: time.Second, wantLast: 0},
		"60 with no long jobs": {n: 60, rate: 0.4, maxRunFor: 30 * time.Second, wantLast: 147500 * time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobs := planJobs(14, "soak-x", tc.n, tc.rate, tc.maxRunFor, tc.long)
			if diff := cmp.Diff(tc.wantLast, jobs[len(jobs)-1].At); diff != "" {
				t.Errorf("last submission (-want +got):\n%s", diff)
			}
			kinds := map[JobKind]int{}
			instant, quick, long := 0, 0, 0
			for i, j := range jobs {
				kinds[j.Kind]++
				switch {
				case tc.long > 0 && j.RunFor == tc.long:
					long++
					if float64(i) >= longShare*float64(tc.n) {
						t.Errorf("%s runs long, submitted after the first %g", j.Name, longShare)
					}
				case j.RunFor < 0 || j.RunFor > tc.maxRunFor:
					t.Errorf("%s runs for %s, outside [0, %s]", j.Name, j.RunFor, tc.maxRunFor)
				case j.RunFor == 0:
					instant++
				case j.RunFor == time.Second:
					quick++
				}
			}
			if tc.n >= 60 && (kinds[TrainJob] == 0 || kinds[BatchJob] == 0 || instant == 0 || quick == 0) {
				t.Errorf("the load does not mix kinds and run times: %v, %d instant, %d of a second", kinds, instant, quick)
			}
			if wantLong := tc.n >= 60 && tc.long > 0; wantLong != (long > 0) {
				t.Errorf("%d jobs run long, want some: %t", long, wantLong)
			}
		})
	}
}
