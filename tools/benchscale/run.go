package benchscale

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/courierdev/courier/test/integration/framework"
)

// idleSettle is how long an idle Courier runs, connected to its workers,
// before its RSS is read.
const idleSettle = 3 * time.Second

// settleTimeout bounds the wait, after the last Ready, for Courier to
// delete the losing copies; past it the run goes on with a warning.
const settleTimeout = time.Minute

// runner is one (W, N) run in a fresh environment: the driver and the
// admitters that play Kueue, and the courier process under measure.
type runner struct {
	opts Options
	// dir is the run's output folder.
	dir        string
	env        *environment
	timeline   *timeline
	driver     *driver
	admitters  *admitters
	courier    *framework.CourierProcess
	courierLog string
}

// runOne measures W workers and N pending workloads, and stops everything
// it started, whatever the outcome.
func runOne(ctx context.Context, opts Options, workers, n int) (res *Result, err error) {
	dir := filepath.Join(opts.OutDir, runName(workers, n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating output folder: %w", err)
	}
	startCtx, cancel := context.WithTimeout(ctx, framework.StartTimeout)
	env, err := startEnvironment(startCtx, workers)
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.stop()) }()
	// Deferred calls run last first: Courier stops, then the informers,
	// then the clusters.
	runCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	r := &runner{opts: opts, dir: dir, env: env, timeline: newTimeline()}
	defer func() { err = errors.Join(err, r.stopCourier()) }()

	setupCtx, cancel := context.WithTimeout(runCtx, framework.StartTimeout)
	defer cancel()
	names, err := env.setUp(setupCtx)
	if err != nil {
		return nil, err
	}
	r.driver = &driver{client: env.Manager.Client, namespace: benchNamespace, check: checkName, concurrency: opts.Concurrency, timeline: r.timeline}
	if err := watchManager(runCtx, env.Manager, benchNamespace, checkName, r.timeline); err != nil {
		return nil, err
	}
	if r.admitters, err = startAdmitters(runCtx, env.Workers, r.timeline, opts.Concurrency); err != nil {
		return nil, err
	}

	res = &Result{Workers: workers, Workloads: n, CourierBinary: opts.Courier, Seed: opts.Seed, Started: time.Now()}
	idle, err := r.idle(setupCtx, names)
	if err != nil {
		return nil, err
	}
	res.IdleRSSBytes, res.IdleCPUMillis = idle.RSS, float64(idle.CPU.Microseconds())/1000
	rng := rand.New(rand.NewPCG(opts.Seed, 0))
	if err := r.backlog(runCtx, res, makeJobs(rng, 0, n)); err != nil {
		return nil, err
	}
	if err := r.steady(runCtx, res, makeJobs(rng, n, opts.SteadyCount)); err != nil {
		return nil, err
	}
	dropped, err := env.auditDropped()
	if err != nil {
		return nil, err
	}
	if len(dropped) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the API servers of %s dropped audit events: request counts are lower bounds", strings.Join(dropped, ", ")))
	}
	return res, nil
}

func runName(workers, n int) string {
	return fmt.Sprintf("w%d-n%d", workers, n)
}

// startCourier starts the courier binary, its output going to logName in
// the run's folder.
func (r *runner) startCourier(ctx context.Context, logName string) error {
	r.courierLog = filepath.Join(r.dir, logName)
	p, err := r.env.StartCourierProcess(ctx, framework.CourierProcessOptions{
		Binary:      r.opts.Courier,
		Dir:         r.env.dir,
		LogPath:     r.courierLog,
		Namespace:   courierNamespace,
		Pprof:       r.opts.Pprof,
		ExtraArgs:   r.opts.CourierArgs,
		ExtraConfig: r.opts.CourierConfig,
	})
	if err != nil {
		return err
	}
	r.courier = p
	return nil
}

func (r *runner) stopCourier() error {
	if r.courier == nil {
		return nil
	}
	err := r.courier.Stop()
	r.courier = nil
	return err
}

// idle runs Courier with no workload until it has connected to every
// worker, reads its RSS and CPU time, and stops it: the baseline for the
// memory a pending workload costs, which the backlog's Courier, started
// with the backlog there, cannot give, and the cost of starting.
func (r *runner) idle(ctx context.Context, workers []string) (procSample, error) {
	if err := r.startCourier(ctx, "courier-idle.log"); err != nil {
		return procSample{}, err
	}
	if err := r.env.WaitWorkersActive(ctx, workers); err != nil {
		return procSample{}, err
	}
	if err := r.env.waitCheckActive(ctx); err != nil {
		return procSample{}, err
	}
	select {
	case <-time.After(idleSettle):
	case <-ctx.Done():
		return procSample{}, fmt.Errorf("waiting for Courier to settle: %w", ctx.Err())
	}
	s, err := readProc(r.courier.PID)
	if err != nil {
		return s, err
	}
	return s, r.stopCourier()
}

// await waits until every workload of the phase is Ready, failing if
// Courier exits or ctx ends first.
func (r *runner) await(ctx context.Context, p *phase, name string) error {
	select {
	case <-p.done:
		return nil
	case <-r.courier.Done():
		return fmt.Errorf("courier exited during the %s phase; see %s", name, r.courierLog)
	case <-ctx.Done():
		err := fmt.Errorf("waiting for %d of %d workloads to be Ready in the %s phase: %w", r.timeline.remaining(p), p.total, name, ctx.Err())
		if admitErr := r.admitters.err(); admitErr != nil {
			err = fmt.Errorf("%w (the simulated workers' last error: %v)", err, admitErr)
		}
		return err
	}
}

// settle waits until Courier has deleted the losing copies, so that the
// phase's cost includes that work: each Ready workload then has one copy,
// on the worker that won. It gives up after settleTimeout with a warning.
func (r *runner) settle(ctx context.Context, res *Result, name string) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		copies, ready := r.admitters.copies.Load(), int64(r.timeline.readyCount())
		if copies <= ready {
			return nil
		}
		if time.Now().After(deadline) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s phase: %d copies of %d Ready workloads remained on the workers %s after the last Ready",
				name, copies, ready, settleTimeout))
			return nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.courier.Done():
			return fmt.Errorf("courier exited during the %s phase; see %s", name, r.courierLog)
		case <-ctx.Done():
			return fmt.Errorf("waiting for Courier to delete the losing copies in the %s phase: %w", name, ctx.Err())
		}
	}
}
