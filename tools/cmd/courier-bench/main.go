// Command courier-bench runs Courier's benchmarks, one per subcommand:
// `courier-bench scale` measures Courier's own cost per dispatch over a
// matrix of workers and pending workloads (make bench-scale); `courier-bench
// stack` measures placement on local clusters with the real Kueue, Trainer
// and JobSet (make bench-stack); `courier-bench compare` runs Courier and
// MultiKueue through the same loads on the same clusters (make bench);
// `courier-bench soak` runs the fault-injection soak (make soak, make
// soak-short). It exits non-zero when
// a benchmark could not run, and when a soak invariant fails; benchmark
// targets missed are printed as FAIL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/courierdev/courier/tools/benchscale"
	"github.com/courierdev/courier/tools/benchstack"
	"github.com/courierdev/courier/tools/soak"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "courier-bench: %v\n", err)
		os.Exit(1)
	}
}

// subcommand is one benchmark.
type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var subcommands = map[string]subcommand{
	"scale":   {"Courier's own CPU, memory and API requests per dispatch, throughput and latency, for W workers and N pending workloads", runScale},
	"stack":   {"placement with the real Kueue, Trainer and JobSet: jobs per worker, and requests to workers per workload", runStack},
	"soak":    {"TrainJobs and batch Jobs under a seeded schedule of faults on a manager and 3 workers, then the exactly-once invariants", runSoak},
	"compare": {"Courier against Kueue's MultiKueue v0.19.1, as released and with worker QPS 1000, through the same loads on the same local clusters", runCompare},
}

func run() error {
	// The harness watches with controller-runtime's informers, which
	// complain on stderr when no logger is set; their logs are not wanted.
	ctrllog.SetLogger(logr.Discard())
	// Ctrl-C cancels the run, which then stops what it started by PID.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(os.Args) < 2 {
		return errors.New("no subcommand\n" + usage())
	}
	name, args := os.Args[1], os.Args[2:]
	if name == "-h" || name == "--help" || name == "help" {
		fmt.Print(usage())
		return nil
	}
	cmd, ok := subcommands[name]
	if !ok {
		return fmt.Errorf("unknown subcommand %q\n%s", name, usage())
	}
	return cmd.run(ctx, args)
}

func usage() string {
	var b strings.Builder
	b.WriteString("Usage: courier-bench <subcommand> [flags]; courier-bench <subcommand> -h lists its flags.\nSubcommands:\n")
	names := make([]string, 0, len(subcommands))
	for name := range subcommands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "  %-8s %s\n", name, subcommands[name].summary)
	}
	return b.String()
}

func runScale(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	workers := fs.String("workers", "2,10", "Comma-separated numbers of worker clusters; each is run with every --n.")
	workloads := fs.String("n", "1000,5000", "Comma-separated numbers of workloads pending when Courier starts.")
	courier := fs.String("courier", "bin/courier", "Path of the courier binary to measure.")
	out := fs.String("out", "_output/bench-scale", "Folder for the JSON results, Courier's logs and profiles.")
	rate := fs.Float64("steady-rate", 10, "Workloads per second submitted in the steady phase; keep it below the backlog's throughput, or the phase measures queueing.")
	count := fs.Int("steady-count", 300, "Workloads submitted in the steady phase; 0 skips it.")
	seed := fs.Uint64("seed", 1, "Seed of the jobs' sizes; one seed submits the same jobs.")
	timeout := fs.Duration("phase-timeout", 30*time.Minute, "Time limit of each phase; a phase that runs out fails the benchmark.")
	pprof := fs.Bool("pprof", true, "Serve Courier's pprof (--pprof-bind-address) and save a CPU and a heap profile of the backlog; turn off for binaries without that flag.")
	concurrency := fs.Int("concurrency", 32, "Requests the simulated Kueue keeps in flight, on the manager and on each worker.")
	courierConfig := fs.String("courier-config", "", `YAML added to Courier's Configuration, such as "dispatchConcurrency: 64".`)
	var courierArgs stringList
	fs.Var(&courierArgs, "courier-arg", "An argument added to Courier's command line, such as --zap-log-level=4; repeat for more.")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	ws, err := intList("workers", *workers)
	if err != nil {
		return err
	}
	ns, err := intList("n", *workloads)
	if err != nil {
		return err
	}
	return benchscale.Run(ctx, benchscale.Options{
		Workers:       ws,
		Workloads:     ns,
		Courier:       *courier,
		OutDir:        *out,
		SteadyRate:    *rate,
		SteadyCount:   *count,
		Seed:          *seed,
		PhaseTimeout:  *timeout,
		Pprof:         *pprof,
		Concurrency:   *concurrency,
		CourierArgs:   courierArgs,
		CourierConfig: *courierConfig,
	}, os.Stdout)
}

// parse parses a subcommand's flags; help is set when -h asked for its
// usage, which the flag set has printed.
func parse(fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return false, nil
}

func runStack(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stack", flag.ContinueOnError)
	dir := fs.String("dir", "_output/bench-stack", "Folder of the environment the benchmark brings up and down: kubeconfigs, logs, state.")
	bin := fs.String("bin", "bin", "Folder of the binaries built by `make e2e-binaries build`; bin/courier is measured.")
	jobs := fs.Int("jobs", 500, "TrainJobs to submit, one GPU each.")
	rate := fs.Float64("rate", 2, "TrainJobs submitted per second; the full stack on 2 cores saturates at about 2.5/s.")
	timeout := fs.Duration("timeout", 30*time.Minute, "Time limit, from the first submission, for every Workload to be Finished.")
	out := fs.String("out", "_output/bench-stack-results", "Folder for stack.json and a copy of Courier's log.")
	keep := fs.Bool("keep", false, "Leave the environment up at the end, to look around; bin/courier-local down --dir DIR stops it.")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	return benchstack.Run(ctx, benchstack.Options{
		Command: strings.Join(append([]string{"courier-bench", "stack"}, args...), " "),
		Dir:     *dir,
		Bin:     *bin,
		Jobs:    *jobs,
		Rate:    *rate,
		Timeout: *timeout,
		OutDir:  *out,
		Keep:    *keep,
	}, os.Stdout)
}

func runSoak(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.Bool("short", false, "The seeded CI variant: 60 jobs and one fault of each kind but the longest partitions; the other flags' defaults follow it.")
	// Peek at --short so that the other defaults follow the variant.
	opts := soak.Full
	if slices.Contains(args, "--short") || slices.Contains(args, "-short") || slices.Contains(args, "--short=true") {
		opts = soak.Short
	}
	dir := fs.String("dir", "_output/soak-env", "Folder of the environment the soak brings up and down: kubeconfigs, logs, state.")
	bin := fs.String("bin", "bin", "Folder of the binaries built by `make e2e-binaries build`.")
	out := fs.String("out", "_output/soak", "Folder for soak.json, timeline.png and the environment's logs.")
	fs.IntVar(&opts.Jobs, "jobs", opts.Jobs, "Jobs to submit: TrainJobs of one GPU and batch Jobs of one CPU.")
	fs.Float64Var(&opts.Rate, "rate", opts.Rate, "Jobs submitted per second.")
	fs.DurationVar(&opts.MaxRunFor, "max-run-for", opts.MaxRunFor, "Longest run time of a job's pods; they range from instant to this.")
	fs.IntVar(&opts.Faults, "faults", opts.Faults, "Faults to inject over the submission time, at least one of each kind.")
	kinds := fs.String("kinds", joinKinds(opts.Kinds), "Comma-separated kinds of fault to inject, each at least once.")
	fs.Uint64Var(&opts.Seed, "seed", opts.Seed, "Seed of the jobs and the fault schedule.")
	fs.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "Time limit, once the faults are over, for every job to finish.")
	fs.DurationVar(&opts.WaitBound, "wait-bound", opts.WaitBound, "Longest a job may wait with no copy once the faults are over.")
	fs.BoolVar(&opts.Keep, "keep", false, "Leave the environment up at the end; bin/courier-local down --dir DIR stops it.")
	fs.IntVar(&opts.CourierLogLevel, "courier-log-level", opts.CourierLogLevel, "Courier's log verbosity: 2 logs its lifecycle, 4 each pass's plan.")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	opts.Kinds = nil
	for k := range strings.SplitSeq(*kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			opts.Kinds = append(opts.Kinds, soak.Kind(k))
		}
	}
	opts.Command = strings.Join(append([]string{"courier-bench", "soak"}, args...), " ")
	opts.Dir, opts.Bin, opts.OutDir = *dir, *bin, *out
	return soak.Run(ctx, opts, os.Stdout)
}

// joinKinds lists kinds of fault for a flag.
func joinKinds(kinds []soak.Kind) string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return strings.Join(out, ",")
}

// stringList is a flag that may be given more than once.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// intList parses a comma-separated list of integers.
func intList(flagName, s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("parsing --%s: %w", flagName, err)
		}
		out = append(out, n)
	}
	return out, nil
}
