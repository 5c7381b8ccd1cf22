package benchstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
	"github.com/courierdev/courier/tools/localcluster"
)

// The environment's shape: two identical workers, as the share target
// asks, sized as courier-local sizes them.
const (
	workers     = 2
	gpuNodes    = 2
	gpusPerNode = 8
)

// Options shape a stack benchmark.
type Options struct {
	// Command is the command line, printed in the header.
	Command string
	// Dir is the environment's folder; Bin holds the binaries of `make
	// e2e-binaries build`.
	Dir, Bin string
	// Jobs TrainJobs are submitted at Rate per second.
	Jobs int
	Rate float64
	// Timeout bounds the wait for every Workload to finish, from the
	// first submission.
	Timeout time.Duration
	// OutDir receives stack.json and a copy of Courier's log.
	OutDir string
	// Keep leaves the environment up at the end, for a look around.
	Keep bool
}

func (o Options) validate() error {
	var errs []error
	if o.Jobs < 1 {
		errs = append(errs, fmt.Errorf("jobs must be at least 1, not %d", o.Jobs))
	}
	if o.Rate <= 0 {
		errs = append(errs, fmt.Errorf("the rate must be positive, not %g", o.Rate))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("the timeout must be positive, not %s", o.Timeout))
	}
	for _, b := range []string{"courier", "kwokctl", "kueue", "trainer-controller-manager", "jobset", "helm"} {
		if _, err := os.Stat(filepath.Join(o.Bin, b)); err != nil {
			errs = append(errs, fmt.Errorf("finding %s (run `make e2e-binaries build`): %w", b, err))
		}
	}
	return errors.Join(errs...)
}

// Run brings up a fresh environment, measures, prints the results and the
// targets, writes them to OutDir, and brings the environment down unless
// Keep, on failure and cancellation too. It returns an error only when the
// benchmark could not be carried out; targets missed are printed as FAIL.
func Run(ctx context.Context, opts Options, out io.Writer) (err error) {
	if err := prepareDirs(&opts.Dir, &opts.Bin, opts.OutDir); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	courierBin := filepath.Join(opts.Bin, "courier")
	fmt.Fprintf(out, "courier-bench stack: %d one-GPU TrainJobs at %g/s on a manager and %d workers of %dx%d GPUs, real Kueue, Trainer and JobSet\n",
		opts.Jobs, opts.Rate, workers, gpuNodes, gpusPerNode)
	fmt.Fprintf(out, "command: %s\n", opts.Command)
	fmt.Fprintf(out, "courier: %s (%s); %d CPUs; environment in %s\n", courierBin, benchreport.BinaryVersion(courierBin), runtime.NumCPU(), opts.Dir)
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}

	lopts := localcluster.Options{Dir: opts.Dir, Bin: opts.Bin, Workers: workers, GPUNodes: gpuNodes, GPUsPerNode: gpusPerNode}
	// Up stops what it started if it fails, and refuses a folder where an
	// environment is up: that one is not this run's to stop.
	env, err := localcluster.Up(ctx, lopts, logf)
	if err != nil {
		return fmt.Errorf("bringing the environment up: %w", err)
	}
	defer func() { err = errors.Join(err, finish(opts, logf)) }()
	if err := localcluster.StartCourierAndConfigure(ctx, env, logf); err != nil {
		return fmt.Errorf("starting Courier: %w", err)
	}

	res, err := measure(ctx, env, opts, logf)
	if err != nil {
		return err
	}
	res.Command = opts.Command
	res.CourierBinary = courierBin + " (" + benchreport.BinaryVersion(courierBin) + ")"
	res.Targets = evaluate(res)
	if err := printResult(out, res); err != nil {
		return fmt.Errorf("printing results: %w", err)
	}
	path := filepath.Join(opts.OutDir, "stack.json")
	if err := benchreport.WriteJSON(path, res); err != nil {
		return err
	}
	fmt.Fprintf(out, "results: %s\n", path)
	return nil
}

// finish keeps a copy of Courier's log and brings the environment down
// by PID, unless it is to be kept.
func finish(opts Options, logf func(string, ...any)) error {
	log := courierLog(opts.Dir)
	copyErr := copyFile(log, filepath.Join(opts.OutDir, "courier.log"))
	if copyErr == nil {
		logf("Courier's log: %s", filepath.Join(opts.OutDir, "courier.log"))
	}
	if opts.Keep {
		cl := filepath.Join(opts.Bin, "courier-local")
		logf("The environment stays up: %s status --dir %s; stop it with %s down --dir %s --bin %s",
			cl, opts.Dir, cl, opts.Dir, opts.Bin)
		return copyErr
	}
	logf("Bringing the environment down")
	// The run's context may be cancelled already; this must still run.
	if err := localcluster.Down(context.Background(), opts.Dir, opts.Bin); err != nil {
		return errors.Join(copyErr, fmt.Errorf("bringing the environment down (%s down --dir %s --bin %s): %w",
			filepath.Join(opts.Bin, "courier-local"), opts.Dir, opts.Bin, err))
	}
	return copyErr
}

// courierLog is where localcluster has Courier write its log.
func courierLog(dir string) string {
	return filepath.Join(dir, "manager", "courier", "courier.log")
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading Courier's log: %w", err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		return fmt.Errorf("copying Courier's log: %w", err)
	}
	return nil
}

// prepareDirs makes the environment and binaries folders absolute, since
// processes started elsewhere read them, and creates the output folder.
func prepareDirs(dir, bin *string, out string) error {
	var err error
	if *dir, err = filepath.Abs(*dir); err != nil {
		return fmt.Errorf("resolving %s: %w", *dir, err)
	}
	if *bin, err = filepath.Abs(*bin); err != nil {
		return fmt.Errorf("resolving %s: %w", *bin, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("creating output folder: %w", err)
	}
	return nil
}
