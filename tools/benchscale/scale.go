package benchscale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// Options shape a scale benchmark: one run per (workers, workloads) pair.
type Options struct {
	// Workers and Workloads are the matrix: every W with every N.
	Workers   []int
	Workloads []int
	// Courier is the path of the courier binary to measure.
	Courier string
	// OutDir receives a JSON file and a folder (logs, profiles) per run,
	// and summary.json.
	OutDir string
	// SteadyRate and SteadyCount shape the steady phase: SteadyCount
	// workloads at SteadyRate per second; 0 workloads skips it.
	SteadyRate  float64
	SteadyCount int
	// Seed draws the jobs' sizes, so that one seed submits the same jobs.
	Seed uint64
	// PhaseTimeout bounds each phase; a phase that runs out fails the run.
	PhaseTimeout time.Duration
	// Pprof serves Courier's pprof and saves its profiles; binaries built
	// before --pprof-bind-address need it off.
	Pprof bool
	// Concurrency is how many requests the simulated Kueue has in flight,
	// on the manager and on each worker.
	Concurrency int
	// CourierArgs are added to Courier's command line, such as
	// --zap-log-level=4 to see every pass.
	CourierArgs []string
	// CourierConfig is YAML added to Courier's Configuration.
	CourierConfig string
}

func (o Options) validate() error {
	var errs []error
	for _, w := range o.Workers {
		if w < 1 {
			errs = append(errs, fmt.Errorf("workers must be at least 1, not %d", w))
		}
	}
	for _, n := range o.Workloads {
		if n < 1 {
			errs = append(errs, fmt.Errorf("workloads must be at least 1, not %d", n))
		}
	}
	if len(o.Workers) == 0 || len(o.Workloads) == 0 {
		errs = append(errs, errors.New("the matrix needs at least one number of workers and one of workloads"))
	}
	if o.SteadyCount < 0 || (o.SteadyCount > 0 && o.SteadyRate <= 0) {
		errs = append(errs, errors.New("the steady phase needs a count of at least 0 and a positive rate"))
	}
	if o.PhaseTimeout <= 0 || o.Concurrency < 1 {
		errs = append(errs, errors.New("the phase timeout and the concurrency must be positive"))
	}
	if _, err := os.Stat(o.Courier); err != nil {
		errs = append(errs, fmt.Errorf("finding the courier binary (run `make build`): %w", err))
	}
	return errors.Join(errs...)
}

// Run runs every (W, N) of the matrix in a fresh environment, printing a
// table and writing a JSON file per run, then checks the targets. It
// returns an error only when a run could not be carried out; targets
// missed are printed as FAIL.
func Run(ctx context.Context, opts Options, out io.Writer) error {
	if err := opts.validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return fmt.Errorf("creating output folder: %w", err)
	}
	var results []*Result
	for _, w := range opts.Workers {
		for _, n := range opts.Workloads {
			fmt.Fprintf(out, "running %d workers, %d pending workloads...\n", w, n)
			res, err := runOne(ctx, opts, w, n)
			if err != nil {
				return fmt.Errorf("running W=%d N=%d: %w", w, n, err)
			}
			results = append(results, res)
			if err := printRun(out, res); err != nil {
				return fmt.Errorf("printing results: %w", err)
			}
			path := filepath.Join(opts.OutDir, runName(w, n)+".json")
			if err := benchreport.WriteJSON(path, res); err != nil {
				return err
			}
			fmt.Fprintf(out, "results: %s\n", path)
		}
	}
	verdicts := evaluate(results)
	benchreport.PrintVerdicts(out, verdicts)
	return benchreport.WriteJSON(filepath.Join(opts.OutDir, "summary.json"), struct {
		Runs    []*Result             `json:"runs"`
		Targets []benchreport.Verdict `json:"targets"`
	}{results, verdicts})
}
