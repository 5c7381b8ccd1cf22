package soak

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The environment's shape: a manager and three workers of 2 nodes with 8
// GPUs each, as issue 14 asks.
const (
	workers     = 3
	gpuNodes    = 2
	gpusPerNode = 8
	// replicaCount Courier processes run with leader election.
	replicaCount = 2
)

// Options shape a soak.
type Options struct {
	// Command is the command line, for the report.
	Command string `json:"command"`
	// Dir is the environment's folder; Bin holds the binaries of `make
	// e2e-binaries build`; OutDir receives the report, the timeline and
	// the logs.
	Dir    string `json:"dir"`
	Bin    string `json:"bin"`
	OutDir string `json:"outDir"`
	// Jobs jobs are submitted at Rate per second, with run times up to
	// MaxRunFor.
	Jobs      int           `json:"jobs"`
	Rate      float64       `json:"rate"`
	MaxRunFor time.Duration `json:"maxRunFor"`
	// Faults faults are injected, at least one of each of Kinds, over the
	// time the load takes.
	Faults int    `json:"faults"`
	Kinds  []Kind `json:"kinds"`
	// Seed makes the same jobs and the same schedule.
	Seed uint64 `json:"seed"`
	// Timeout bounds the wait for every job to finish once the load is
	// submitted and the faults are over.
	Timeout time.Duration `json:"timeout"`
	// WaitBound is how long a job may wait with no copy anywhere once the
	// faults are over.
	WaitBound time.Duration `json:"waitBound"`
	// Keep leaves the environment up at the end.
	Keep bool `json:"keep"`
	// CourierLogLevel is Courier's log verbosity: 2, its lifecycle, by
	// default; 4 adds each pass's plan, to read a broken invariant's path.
	CourierLogLevel int `json:"courierLogLevel"`
}

// Full is the soak of `make soak`, every kind of fault; Short the seeded CI
// variant of `make soak-short`, one fault of each of ShortKinds.
var (
	Full = Options{Jobs: 500, Rate: 1, MaxRunFor: time.Minute, Faults: 36, Kinds: Kinds, Seed: 14,
		Timeout: 10 * time.Minute, WaitBound: time.Minute, CourierLogLevel: 2}
	Short = Options{Jobs: 60, Rate: 0.4, MaxRunFor: 30 * time.Second, Faults: len(ShortKinds), Kinds: ShortKinds, Seed: 14,
		Timeout: 4 * time.Minute, WaitBound: time.Minute, CourierLogLevel: 2}
)

func (o Options) validate() error {
	var errs []error
	if o.Jobs < 1 {
		errs = append(errs, fmt.Errorf("jobs must be at least 1, not %d", o.Jobs))
	}
	if o.Rate <= 0 {
		errs = append(errs, fmt.Errorf("the rate must be positive, not %g", o.Rate))
	}
	if o.MaxRunFor < time.Second {
		errs = append(errs, fmt.Errorf("the longest run time must be at least 1s, not %s", o.MaxRunFor))
	}
	if len(o.Kinds) == 0 {
		errs = append(errs, errors.New("no kind of fault to inject"))
	}
	for _, k := range o.Kinds {
		if !slices.Contains(Kinds, k) {
			errs = append(errs, fmt.Errorf("unknown kind of fault %q", k))
		}
	}
	if o.Timeout <= 0 || o.WaitBound <= 0 {
		errs = append(errs, fmt.Errorf("the timeout and the wait bound must be positive, not %s and %s", o.Timeout, o.WaitBound))
	}
	for _, b := range []string{"courier", "kwokctl", "kueue", "trainer-controller-manager", "jobset", "helm"} {
		if _, err := os.Stat(filepath.Join(o.Bin, b)); err != nil {
			errs = append(errs, fmt.Errorf("finding %s (run `make e2e-binaries build`): %w", b, err))
		}
	}
	return errors.Join(errs...)
}

// window is the first 80% of the time the load takes to submit: the
// faults spread over it, so that those that need a running job (a copy to
// delete, a WorkerCluster that holds one) find one even when faults on the
// same worker wait for each other.
func (o Options) window() time.Duration {
	return time.Duration(0.8 * float64(o.Jobs) / o.Rate * float64(time.Second))
}
