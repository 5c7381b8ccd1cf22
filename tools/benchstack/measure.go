package benchstack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/tools/localcluster"
)

const (
	// progressEvery is how often the run prints how far it got.
	progressEvery = 30 * time.Second
	// settleTimeout bounds the wait, after the last Workload Finished, for
	// Courier to delete the TrainJob copies, so that the requests counted
	// include those deletes; past it the run goes on with a warning.
	settleTimeout = 2 * time.Minute
	// inFlight is the pause before the last scrape, for requests whose
	// effect the informers saw before Courier got its answer.
	inFlight = time.Second
)

// measure submits the jobs to a running environment, waits until all are
// Finished and their copies deleted, and returns what it saw.
func measure(ctx context.Context, env *localcluster.Env, opts Options, logf func(string, ...any)) (*Result, error) {
	run := rand.String(5)
	names := jobNames(run, opts.Jobs)
	t := newTracker("stack-" + run + "-")
	// Informers and the submission stop when the measure ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := watch(ctx, env, labels.SelectorFromSet(labels.Set{runLabel: run}), t); err != nil {
		return nil, err
	}
	metricsURL, err := env.CourierMetricsURL()
	if err != nil {
		return nil, err
	}
	before, err := scrape(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return nil, err
	}

	res := &Result{Jobs: opts.Jobs, Rate: opts.Rate, Run: run, Workers: env.Workers, GPUNodes: gpuNodes, GPUsPerNode: gpusPerNode,
		MetricsURL: metricsURL, Started: time.Now()}
	logf("Submitting %d TrainJobs at %g/s (label %s=%s)", opts.Jobs, opts.Rate, runLabel, run)
	submitted := make(chan error, 1)
	go func() {
		submitted <- submit(ctx, mgr, names, opts.Rate, func(name string) client.Object { return benchJob(name, run).Obj() }, t.submitted)
	}()
	if err := awaitFinished(ctx, opts, names, t, submitted, metricsURL, logf); err != nil {
		return nil, err
	}
	lastFinished := time.Now()
	logf("Every Workload is Finished; waiting for Courier to delete the TrainJob copies")
	if err := awaitDeleted(ctx, names, t, res); err != nil {
		return nil, err
	}
	res.SettleSeconds = time.Since(lastFinished).Seconds()
	select {
	case <-time.After(inFlight):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := scrape(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	summarize(res, t, names, after.since(before))
	return res, nil
}

// awaitFinished waits until every job's manager Workload is Finished,
// printing progress, and fails when the submission fails, Courier is gone,
// or opts.Timeout passes.
func awaitFinished(ctx context.Context, opts Options, names []string, t *tracker, submitted <-chan error, metricsURL string, logf func(string, ...any)) error {
	start := time.Now()
	deadline := time.NewTimer(opts.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastProgress := start
	for {
		select {
		case err := <-submitted:
			if err != nil {
				return err
			}
			logf("All %d submitted in %.1f s", len(names), time.Since(start).Seconds())
		case <-deadline.C:
			p := t.progress(names)
			return fmt.Errorf("%d of %d Workloads not Finished %s after the first submission (Courier's log: %s); the first of them:\n    %s",
				len(names)-p.finished, len(names), opts.Timeout, courierLog(opts.Dir), strings.Join(t.unfinished(names, 5), "\n    "))
		case <-ctx.Done():
			p := t.progress(names)
			return fmt.Errorf("waiting for %d of %d Workloads to finish: %w", len(names)-p.finished, len(names), ctx.Err())
		case <-tick.C:
			p := t.progress(names)
			if p.finished == len(names) {
				return nil
			}
			if time.Since(lastProgress) < progressEvery {
				continue
			}
			lastProgress = time.Now()
			logf("%3.0f s: %s", time.Since(start).Seconds(), p)
			// A refused connection means nothing listens: Courier is gone.
			if _, err := scrape(ctx, metricsURL); errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("courier no longer serves its metrics; see its log %s: %w", courierLog(opts.Dir), err)
			}
		}
	}
}

// awaitDeleted waits until every TrainJob copy seen is deleted, up to
// settleTimeout, after which it goes on with a warning.
func awaitDeleted(ctx context.Context, names []string, t *tracker, res *Result) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		live := t.progress(names).liveCopies
		if live == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d TrainJob copies were still on the workers %s after the last Workload Finished; their deletes are not counted", live, settleTimeout))
			return nil
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("waiting for Courier to delete the TrainJob copies: %w", ctx.Err())
		}
	}
}
