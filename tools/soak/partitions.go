package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/courierdev/courier/tools/faultproxy"
	"github.com/courierdev/courier/tools/localcluster"
)

// How long the faults on Courier's links last, besides those that follow
// workerLostTimeout.
const (
	slowFor = time.Minute
	// settleAfter is how long cut-off-all and restart-after-down keep
	// every other fault away once their links are back, so that what
	// Courier does on reconnecting is theirs to judge.
	settleAfter = 30 * time.Second
	// restartBack is how long after Courier's restart restart-after-down
	// brings the worker's link back: less than any workerLostTimeout the
	// soak runs with, so that a Courier counting only its own time moves
	// nothing.
	restartBack = 15 * time.Second
)

// longRunFor is how long the load's long jobs run: well past
// workerLostTimeout, so that a worker cut off from Courier still runs one
// when Courier may move it, and when the fault ends.
func longRunFor(lostTimeout time.Duration) time.Duration {
	return lostTimeout + 90*time.Second
}

// outlive is how long the job a link fault picks must still run, from the
// fault's start, for the fault to show what it should: past the time
// Courier may move it, and past the fault's end.
func (in *injector) outlive(k Kind) time.Duration {
	if k == RestartAfterDown {
		return in.lostTimeout + pauseLongExtra + restartBack + 10*time.Second
	}
	return in.movesAfter() + pauseLongExtra + 10*time.Second
}

// movesAfter bounds how long a worker is out of Courier's reach before
// its jobs may move: workerLostTimeout after the last heartbeat, but the
// worker is given up no sooner than the self-fault window after Courier
// counted it out of reach, and its jobs move the fence's margin after
// that (lostworker.Revoke).
func (in *injector) movesAfter() time.Duration {
	return in.lostTimeout + selfFaultWindow
}

// runner is a job running on a worker, with the run time it has left.
type runner struct {
	worker, job string
	left        time.Duration
}

func (r runner) String() string {
	return fmt.Sprintf("%s runs %s, %s left", r.worker, r.job, r.left.Round(time.Second))
}

// runners returns the jobs with a pod running on workers, as last seen,
// the one with the longest time left first.
func (in *injector) runners(workers []string) []runner {
	var out []runner
	now := time.Now()
	for _, j := range in.rec.snapshot() {
		for _, p := range j.Pods {
			if slices.Contains(workers, p.Worker) && !p.Running.IsZero() && p.Ended.IsZero() {
				out = append(out, runner{worker: p.Worker, job: j.Name, left: j.RunFor - now.Sub(p.Running)})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b runner) int { return int(b.left - a.left) })
	return out
}

// awaitRunner waits up to findFor for a job on one of workers with need
// left to run, which take accepts; after that, it takes any running job
// take accepts, for up to findFor more, and when none runs at all (the load
// has ended), submits jobs of its own that run long enough.
func (in *injector) awaitRunner(ctx context.Context, workers []string, need time.Duration, take func(runner) bool) (runner, error) {
	var got runner
	deadline := time.Now().Add(findFor)
	submitted := false
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*findFor, true, func(ctx context.Context) (bool, error) {
		runners := in.runners(workers)
		for _, r := range runners {
			if (r.left >= need || time.Now().After(deadline)) && take(r) {
				got = r
				return true, nil
			}
		}
		if len(runners) == 0 && !submitted && time.Now().After(deadline) {
			names, err := in.targetJobs(ctx, need+time.Minute)
			if err != nil {
				return false, err
			}
			submitted = true
			in.logf("No job running on %s for %s: submitted %s", strings.Join(workers, ", "), findFor, strings.Join(names, ", "))
		}
		return false, nil
	})
	if err != nil {
		return runner{}, fmt.Errorf("waiting %s for a job running on %s, %s of it left: %w", 2*findFor, strings.Join(workers, ", "), need, err)
	}
	return got, nil
}

// everyWorkerRuns tells whether each of workers runs a job with need left.
func everyWorkerRuns(runners []runner, workers []string, need time.Duration) bool {
	for _, w := range workers {
		if !slices.ContainsFunc(runners, func(r runner) bool { return r.worker == w && r.left >= need }) {
			return false
		}
	}
	return true
}

// links are the soak's proxies between Courier and each worker's API
// server, by worker.
type links map[string]*faultproxy.Proxy

// startLinks starts a proxy to each worker's API server and routes
// Courier's kubeconfig for the worker through it. Everything else reaches
// the API servers directly: the workers' controllers, Kueue, the fences
// and the soak's own watches.
func startLinks(env *localcluster.Env) (links, error) {
	out := links{}
	for _, w := range env.Workers {
		addr, err := env.APIServerAddress(w)
		if err != nil {
			out.close()
			return nil, err
		}
		p, err := faultproxy.Start(addr)
		if err != nil {
			out.close()
			return nil, err
		}
		out[w] = p
		env.RouteCourier(w, p.Addr())
	}
	return out, nil
}

func (l links) close() {
	for _, p := range l {
		_ = p.Close()
	}
}

// set puts the links of workers in mode.
func (l links) set(workers []string, mode faultproxy.Mode) error {
	var errs []error
	for _, w := range workers {
		p := l[w]
		if p == nil {
			errs = append(errs, fmt.Errorf("no proxy between Courier and %s", w))
			continue
		}
		if err := p.Set(mode); err != nil {
			errs = append(errs, fmt.Errorf("setting Courier's link to %s to %s: %w", w, mode, err))
		}
	}
	return errors.Join(errs...)
}

// cutTotal counts the connections partitions cut on the links of workers.
func (l links) cutTotal(workers []string) int {
	n := 0
	for _, w := range workers {
		if p := l[w]; p != nil {
			_, cut := p.Stats()
			n += cut
		}
	}
	return n
}

// breakLinks puts the links of workers in mode for hold, then lets them
// pass again, even when ctx ends.
func (in *injector) breakLinks(ctx context.Context, workers []string, mode faultproxy.Mode, hold time.Duration) (string, error) {
	cutBefore := in.links.cutTotal(workers)
	running := in.runningOn(workers)
	err := in.links.set(workers, mode)
	sleep(ctx, hold)
	err = errors.Join(err, in.links.set(workers, faultproxy.Pass))
	note := fmt.Sprintf("Courier's link to %s: %s for %s (workerLostTimeout %s), while %s ran there",
		strings.Join(workers, ", "), mode, hold, in.lostTimeout, countJobs(running))
	if cut := in.links.cutTotal(workers) - cutBefore; cut > 0 {
		note += fmt.Sprintf("; %d open connections cut", cut)
	}
	return note, err
}

// pick finds the worker a partition or a hang acts on: one whose job will
// outlive it, whose lock it then holds. It returns the worker and what it
// runs.
func (in *injector) pick(ctx context.Context, f *Fault, locks map[string]*sync.Mutex) (string, string, error) {
	r, err := in.awaitRunner(ctx, in.env.Workers, in.outlive(f.Kind), func(r runner) bool { return locks[r.worker].TryLock() })
	if err != nil {
		return "", "", err
	}
	return r.worker, r.String(), nil
}

// slowLink slows Courier's link to worker for slowFor.
func (in *injector) slowLink(ctx context.Context, worker string) (string, error) {
	return in.breakLinks(ctx, []string{worker}, faultproxy.Slow, slowFor)
}

// cutOffAll waits until every worker has been connected for settleAfter
// and for a job that runs past workerLostTimeout, cuts Courier off from
// every worker for twice workerLostTimeout, and holds every other fault off
// for settleAfter once the links are back. The fault starts at the cut.
func (in *injector) cutOffAll(ctx context.Context, f *Fault) (string, error) {
	if err := in.awaitSettled(ctx); err != nil {
		return "", err
	}
	// It shows most when every worker runs a job that outlives it: it
	// waits up to findFor for that, then takes whatever runs.
	need, since := in.outlive(CutOffAll), time.Now()
	r, err := in.awaitRunner(ctx, in.env.Workers, need, func(runner) bool {
		return time.Since(since) > findFor || everyWorkerRuns(in.runners(in.env.Workers), in.env.Workers, need)
	})
	if err != nil {
		return "", err
	}
	// The jobs it judges are those running when the links are cut, not
	// when it began waiting.
	f.Started = time.Now()
	note, err := in.breakLinks(ctx, in.env.Workers, faultproxy.Partition, 2*in.lostTimeout)
	sleep(ctx, settleAfter)
	return r.String() + "; " + note, err
}

// restartAfterDown waits until every worker has been connected for
// settleAfter, picks a worker that runs a job that will outlive the fault,
// and cuts Courier off from it, when the fault starts; once Courier counts it
// disconnected, stops every Courier replica until the worker has been out
// of reach for workerLostTimeout + 20s; starts them again; and brings the
// link back restartBack later. It holds every other fault off for
// settleAfter once the link is back.
func (in *injector) restartAfterDown(ctx context.Context, f *Fault) (string, error) {
	if err := in.awaitSettled(ctx); err != nil {
		return "", err
	}
	r, err := in.awaitRunner(ctx, in.env.Workers, in.outlive(RestartAfterDown), func(runner) bool { return true })
	if err != nil {
		return "", err
	}
	worker := r.worker
	f.Target = worker
	running := in.runningOn([]string{worker})
	cut := time.Now()
	f.Started = cut
	if err := in.links.set([]string{worker}, faultproxy.Partition); err != nil {
		return "", err
	}
	note, err := in.restartWhileCut(ctx, worker, cut)
	err = errors.Join(err, in.links.set([]string{worker}, faultproxy.Pass))
	note = fmt.Sprintf("%s; Courier's link to it cut while %s ran there; %s; the link back %s after the cut",
		r, countJobs(running), note, time.Since(cut).Round(time.Second))
	sleep(ctx, settleAfter)
	return note, err
}

// restartWhileCut stops every Courier replica once Courier counts worker
// disconnected, and starts them again once it has been cut off since cut
// for workerLostTimeout + 20s, and restartBack after that.
func (in *injector) restartWhileCut(ctx context.Context, worker string, cut time.Time) (string, error) {
	var seen time.Duration
	err := wait.PollUntilContextTimeout(ctx, time.Second, in.lostTimeout, true, func(context.Context) (bool, error) {
		for _, d := range in.rec.disconnected() {
			if d.Worker == worker && d.Cleared.IsZero() && !d.Since.Before(cut.Add(-time.Second)) {
				seen = time.Since(cut).Round(time.Second)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting %s for Courier to count %s disconnected (status.disconnectedSince): %w", in.lostTimeout, worker, err)
	}
	back := cut.Add(in.lostTimeout + pauseLongExtra)
	// Nothing moves while every replica is down, submissions included
	// (Courier's webhooks refuse them): the log says why.
	in.logf("Stopping every Courier replica until %s: no job is placed, moved or mirrored meanwhile, and submissions wait for its webhooks",
		back.Format(time.TimeOnly))
	in.courierHeld.Lock()
	defer in.courierHeld.Unlock()
	stopped, err := in.courier.stopAll()
	if err != nil {
		return "", errors.Join(err, in.courier.startAll())
	}
	sleep(ctx, time.Until(back))
	down := time.Since(cut).Round(time.Second)
	in.logf("Starting every Courier replica again; Courier's link to %s back in %s", worker, restartBack)
	if err := in.courier.startAll(); err != nil {
		return "", err
	}
	sleep(ctx, restartBack)
	return fmt.Sprintf("Courier counted it disconnected after %s; %s stopped, started again once it had been out of reach for %s",
		seen, strings.Join(stopped, " and "), down), nil
}

// awaitSettledFor bounds the wait for every worker to be connected again before
// cut-off-all or restart-after-down: an earlier fault's outage, and the
// reconnection after it.
const awaitSettledFor = 4 * time.Minute

// awaitSettled waits until Courier has counted every worker connected for
// settleAfter. cut-off-all and restart-after-down judge every job that
// runs when they begin; a worker an earlier fault kept out of reach, whose
// jobs Courier is still moving or whose fence is still stopping them, is
// that fault's to judge, not theirs.
func (in *injector) awaitSettled(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, awaitSettledFor, true, func(context.Context) (bool, error) {
		return settledAt(in.rec.disconnected(), time.Now()), nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for Courier to count every worker connected for %s (status.disconnectedSince): %w", awaitSettledFor, settleAfter, err)
	}
	return nil
}

// settledAt tells whether, at now, no worker is counted disconnected and
// none was within settleAfter.
func settledAt(ds []Disconnection, now time.Time) bool {
	for _, d := range ds {
		if d.Cleared.IsZero() || now.Sub(d.Cleared) < settleAfter {
			return false
		}
	}
	return true
}

// runningOn returns the jobs with a pod running, as last seen, on workers.
func (in *injector) runningOn(workers []string) []string {
	var out []string
	for _, j := range in.rec.snapshot() {
		for _, p := range j.Pods {
			if slices.Contains(workers, p.Worker) && !p.Running.IsZero() && p.Ended.IsZero() {
				out = append(out, j.Name)
				break
			}
		}
	}
	return out
}

// countJobs names a few jobs and counts the rest.
func countJobs(names []string) string {
	switch n := len(names); {
	case n == 0:
		return "no job"
	case n <= 2:
		return strings.Join(names, " and ")
	default:
		return fmt.Sprintf("%s and %d more", strings.Join(names[:2], ", "), n-2)
	}
}
