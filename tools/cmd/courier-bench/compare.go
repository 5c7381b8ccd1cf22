package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/courierdev/courier/tools/benchstack"
)

// runCompare runs Courier and MultiKueue through the same loads on the same
// local clusters (make bench).
func runCompare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "A short run to check the harness, about 5 minutes a repeat on this machine: --bursts 30 --rates 1 --rate-jobs 15 --batch-jobs 10 --timeout 10m, unless those are given too.")
	dir := fs.String("dir", "_output/bench-compare", "Folder of the environment the comparison brings up and down: kubeconfigs, logs, state.")
	bin := fs.String("bin", "bin", "Folder of the binaries of `make e2e-binaries build` and tools/hack/build-kueue-multikueue-qps.sh.")
	out := fs.String("out", "_output/bench-compare-results", "Folder for the comparison's JSON and PNGs.")
	workers := fs.Int("workers", 2, "Identical worker clusters of 2x8 GPUs.")
	bursts := fs.String("bursts", "500,1000", "Comma-separated burst sizes: TrainJobs submitted at once; empty for none.")
	rates := fs.String("rates", "1", "Comma-separated steady rates, TrainJobs per second; empty for none. The machine here is about half busy at 0.5/s, near saturation at 1/s and past it at 2/s.")
	rateJobs := fs.Int("rate-jobs", 200, "TrainJobs submitted at each steady rate.")
	batchJobs := fs.Int("batch-jobs", 0, "A burst of batch Jobs through Courier's external framework, for Courier only; 0 for none.")
	systems := fs.String("systems", strings.Join(benchstack.DefaultSystems, ","), "Comma-separated systems to run under each load; repeat N runs them in this order rotated by N-1: "+strings.Join(benchstack.SystemOrder, ", ")+". "+benchstack.SystemMultiKueueAllQPS+" is the faster MultiKueue build with the manager Kueue's own client of the manager at 1,000 QPS and burst 1,000 too, as kueue#15206's default and kueue#15280's gate would run it. "+benchstack.SystemFloor+" is no dispatcher: the harness turns the check Ready and completes the job, and nothing reaches a worker, to measure what the manager side costs whatever dispatches. "+benchstack.SystemFree+" is the floor with each job run on a worker: the harness copies it to one worker by Courier's rules and mirrors its end, with no dispatcher process, to measure what the stack does with a dispatcher that costs nothing of its own. "+benchstack.SystemBaseline+" is Courier run from bin/"+benchstack.BaselineCourier+" (tools/hack/build-courier-baseline.sh <commit>), to measure a change against the code before it in the same run.")
	repeats := fs.Int("repeats", 3, "How many times every load runs through every system; the figures are the medians, with the least and greatest.")
	runFor := fs.Duration("run-for", 0, "How long each job's pods run on the simulated nodes; 0 completes them at once.")
	timeout := fs.Duration("timeout", 30*time.Minute, "Time limit of each phase, from its first submission.")
	profile := fs.Bool("profile", false, "Save CPU profiles of Courier, the manager's Kueue and the manager's API server over every phase of every system, in 10 s slices, under --dir; `go tool pprof -top bin/courier FILES` merges them. On or off for every system alike.")
	rest := fs.Duration("rest", 30*time.Second, "Before every phase, after its warm-up, measure each side's CPU at rest for this long, and report the phase's CPU per job above that rest too; 0 for not at all.")
	keep := fs.Bool("keep", false, "Leave the environment up at the end; bin/courier-local down --dir DIR stops it.")
	logLevel := fs.Int("courier-log-level", 0, "Courier's log verbosity, the baseline's too: 4 logs each pass's plan, which tools/hack/pass-census.py counts by cause; it costs Courier CPU alike in every phase.")
	tabulate := fs.String("tabulate", "", "Run nothing: write the summary, table and plots of this comparison JSON again, beside it, from the phases it holds (of a run stopped early, say).")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *tabulate != "" {
		return benchstack.Tabulate(*tabulate, os.Stdout)
	}
	if *smoke {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["bursts"] {
			*bursts = "30"
		}
		if !set["rates"] {
			*rates = "1"
		}
		if !set["rate-jobs"] {
			*rateJobs = 15
		}
		if !set["batch-jobs"] {
			*batchJobs = 10
		}
		if !set["timeout"] {
			*timeout = 10 * time.Minute
		}
	}
	bs, err := listOf("bursts", *bursts, strconv.Atoi)
	if err != nil {
		return err
	}
	rs, err := listOf("rates", *rates, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err != nil {
		return err
	}
	ss, err := listOf("systems", *systems, func(s string) (string, error) { return s, nil })
	if err != nil {
		return err
	}
	return benchstack.Compare(ctx, benchstack.CompareOptions{
		Command:         strings.Join(append([]string{"courier-bench", "compare"}, args...), " "),
		Dir:             *dir,
		Bin:             *bin,
		OutDir:          *out,
		Workers:         *workers,
		Bursts:          bs,
		Rates:           rs,
		RateJobs:        *rateJobs,
		BatchJobs:       *batchJobs,
		Systems:         ss,
		Repeats:         *repeats,
		RunFor:          *runFor,
		Timeout:         *timeout,
		Keep:            *keep,
		Profile:         *profile,
		Rest:            *rest,
		CourierLogLevel: *logLevel,
	}, os.Stdout)
}

// listOf parses a comma-separated list; an empty string is an empty list.
func listOf[T any](flagName, s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("parsing --%s: %w", flagName, err)
		}
		out = append(out, v)
	}
	return out, nil
}
