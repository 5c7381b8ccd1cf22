package benchscale

import (
	"context"
	"fmt"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// Backlog is the phase where Courier starts with N workloads pending.
type Backlog struct {
	// CreateSeconds is how long the driver took to create the backlog,
	// before Courier started.
	CreateSeconds float64 `json:"createSeconds"`
	// FirstReadySeconds and DrainSeconds are from Courier's start to the
	// first and the last check seen Ready.
	FirstReadySeconds float64 `json:"firstReadySeconds"`
	DrainSeconds      float64 `json:"drainSeconds"`
	// Throughput is N / DrainSeconds.
	Throughput float64 `json:"throughputPerSecond"`
	// RSSPerPendingBytes is (peak RSS - idle RSS) / N.
	RSSPerPendingBytes float64 `json:"rssPerPendingBytes"`
	Cost               Cost    `json:"cost"`
}

// Steady is the phase where workloads arrive at a fixed rate.
type Steady struct {
	Count         int     `json:"count"`
	RequestedRate float64 `json:"requestedRatePerSecond"`
	AchievedRate  float64 `json:"achievedRatePerSecond"`
	// Latency is from quota reserved (the driver's status update
	// returned) to Courier's check seen Ready.
	Latency benchreport.Percentiles `json:"latencySeconds"`
	// ToFirstCopy is from quota reserved to a worker seeing Courier's
	// first copy; AdmittedToReady from the first worker's admission
	// returning to the check seen Ready. Together they are Courier's part
	// of Latency; the rest is the simulated workers' Kueue.
	ToFirstCopy     benchreport.Percentiles `json:"toFirstCopySeconds"`
	AdmittedToReady benchreport.Percentiles `json:"admittedToReadySeconds"`
	Cost            Cost                    `json:"cost"`
}

// backlog creates the jobs' Workloads while Courier is stopped, starts
// Courier, and measures it until every check is Ready and the losing
// copies are gone. A CPU and a heap profile are taken meanwhile if asked.
func (r *runner) backlog(ctx context.Context, res *Result, jobs []job) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.PhaseTimeout)
	defer cancel()
	names := workloadNames(jobs)
	p := r.timeline.expect(names)
	created := time.Now()
	if err := r.driver.submitAll(ctx, jobs); err != nil {
		return err
	}
	res.Backlog.CreateSeconds = time.Since(created).Seconds()

	offsets, err := r.env.auditOffsets()
	if err != nil {
		return err
	}
	machine, err := readMachineCPU()
	if err != nil {
		return err
	}
	stack, err := r.stackCPU(0)
	if err != nil {
		return err
	}
	if err := r.startCourier(ctx, "courier.log"); err != nil {
		return err
	}
	// A fresh process: its CPU time and reconcile count start from zero.
	w := window{start: r.courier.Started, offsets: offsets, machine: machine, stack: stack}
	if err := resetPeakRSS(r.courier.PID); err != nil {
		return err
	}
	type profiles struct {
		paths []string
		err   error
	}
	profiled := make(chan profiles, 1)
	if r.opts.Pprof {
		addr := r.courier.PprofAddress
		go func() {
			paths, err := captureProfiles(ctx, addr, r.dir, p.halfway)
			profiled <- profiles{paths, err}
		}()
	}
	if err := r.await(ctx, p, "backlog"); err != nil {
		return err
	}
	if err := r.settle(ctx, res, "backlog"); err != nil {
		return err
	}
	cost, err := r.close(ctx, w, len(jobs))
	if err != nil {
		return err
	}
	if r.opts.Pprof {
		// Waiting keeps the profile's own cost out of the steady phase.
		select {
		case got := <-profiled:
			if got.err != nil {
				return got.err
			}
			res.Profiles = got.paths
		case <-ctx.Done():
			return fmt.Errorf("waiting for Courier's profiles: %w", ctx.Err())
		}
	}

	b := &res.Backlog
	b.Cost = cost
	b.DrainSeconds = r.timeline.lastReady(p).Sub(w.start).Seconds()
	b.Throughput = float64(len(jobs)) / b.DrainSeconds
	first := r.timeline.lastReady(p)
	for _, m := range r.timeline.marksOf(names) {
		if m.ready.Before(first) {
			first = m.ready
		}
	}
	b.FirstReadySeconds = first.Sub(w.start).Seconds()
	b.RSSPerPendingBytes = (float64(cost.PeakRSSBytes) - float64(res.IdleRSSBytes)) / float64(len(jobs))
	return nil
}

// steady submits the jobs at the configured rate to the running Courier
// and measures each one's latency and Courier's cost.
func (r *runner) steady(ctx context.Context, res *Result, jobs []job) error {
	if len(jobs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.PhaseTimeout)
	defer cancel()
	names := workloadNames(jobs)
	p := r.timeline.expect(names)
	w, err := r.open(ctx)
	if err != nil {
		return err
	}
	achieved, err := r.driver.submitAtRate(ctx, jobs, r.opts.SteadyRate)
	if err != nil {
		return err
	}
	if err := r.await(ctx, p, "steady"); err != nil {
		return err
	}
	if err := r.settle(ctx, res, "steady"); err != nil {
		return err
	}
	cost, err := r.close(ctx, w, len(jobs))
	if err != nil {
		return err
	}

	var latency, toCopy, toReady []time.Duration
	for _, m := range r.timeline.marksOf(names) {
		latency = append(latency, m.ready.Sub(m.reserved))
		toCopy = append(toCopy, m.firstCopy.Sub(m.reserved))
		toReady = append(toReady, m.ready.Sub(m.admitted))
	}
	res.Steady = Steady{
		Count:           len(jobs),
		RequestedRate:   r.opts.SteadyRate,
		AchievedRate:    achieved,
		Latency:         benchreport.PercentilesOf(latency),
		ToFirstCopy:     benchreport.PercentilesOf(toCopy),
		AdmittedToReady: benchreport.PercentilesOf(toReady),
		Cost:            cost,
	}
	return nil
}
