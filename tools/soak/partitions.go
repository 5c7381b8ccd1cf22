package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// cutOff waits for a running job on worker, so that the worker has one to
// go on running, and breaks Courier's link to it for hold.
func (in *injector) cutOff(ctx context.Context, worker string, mode faultproxy.Mode, hold time.Duration) (string, error) {
	if _, _, err := in.liveCopy(ctx, worker, nil); err != nil {
		return "", err
	}
	return in.breakLinks(ctx, []string{worker}, mode, hold)
}

// slowLink slows Courier's link to worker for slowFor.
func (in *injector) slowLink(ctx context.Context, worker string) (string, error) {
	return in.breakLinks(ctx, []string{worker}, faultproxy.Slow, slowFor)
}

// cutOffAll waits for a running job, cuts Courier off from every worker
// for twice workerLostTimeout, and holds every other fault off for
// settleAfter once the links are back.
func (in *injector) cutOffAll(ctx context.Context) (string, error) {
	if _, _, err := in.liveCopy(ctx, "", nil); err != nil {
		return "", err
	}
	note, err := in.breakLinks(ctx, in.env.Workers, faultproxy.Partition, 2*in.lostTimeout)
	sleep(ctx, settleAfter)
	return note, err
}

// restartAfterDown cuts Courier off from worker, which runs a job; once
// Courier counts it disconnected, stops every Courier replica until the
// worker has been out of reach for workerLostTimeout + 20s; starts them
// again; and brings the link back restartBack later. It holds every other
// fault off for settleAfter once the link is back.
func (in *injector) restartAfterDown(ctx context.Context, worker string) (string, error) {
	if _, _, err := in.liveCopy(ctx, worker, nil); err != nil {
		return "", err
	}
	running := in.runningOn([]string{worker})
	cut := time.Now()
	if err := in.links.set([]string{worker}, faultproxy.Partition); err != nil {
		return "", err
	}
	note, err := in.restartWhileCut(ctx, worker, cut)
	err = errors.Join(err, in.links.set([]string{worker}, faultproxy.Pass))
	note = fmt.Sprintf("Courier's link to %s cut while %s ran there; %s; the link back %s after the cut",
		worker, countJobs(running), note, time.Since(cut).Round(time.Second))
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
	stopped, err := in.courier.stopAll()
	if err != nil {
		return "", errors.Join(err, in.courier.startAll())
	}
	sleep(ctx, time.Until(cut.Add(in.lostTimeout+pauseLongExtra)))
	down := time.Since(cut).Round(time.Second)
	if err := in.courier.startAll(); err != nil {
		return "", err
	}
	sleep(ctx, restartBack)
	return fmt.Sprintf("Courier counted it disconnected after %s; %s stopped, started again once it had been out of reach for %s",
		seen, strings.Join(stopped, " and "), down), nil
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
