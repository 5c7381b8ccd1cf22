package benchscale

import (
	"context"
	"fmt"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// Cost is what the courier process spent over one phase.
type Cost struct {
	// Seconds is the length of the measured window: from the phase's start
	// until every workload was Ready and the losing copies were gone.
	Seconds              float64 `json:"seconds"`
	CPUMillis            float64 `json:"cpuMillis"`
	CPUMillisPerDispatch float64 `json:"cpuMillisPerDispatch"`
	// PeakRSSBytes is VmHWM, reset at the phase's start.
	PeakRSSBytes uint64 `json:"peakRSSBytes"`
	// MachineBusy is the share of all the machine's cores that was busy,
	// every process included: near 1, the machine, not Courier, sets the
	// pace.
	MachineBusy float64 `json:"machineBusy"`
	// Stack is each kind of process's CPU over the window, largest first:
	// the API servers, etcds and controller managers, Courier, the load
	// driver.
	Stack []benchreport.ProcessCPU `json:"stack"`
	// Reconciles counts the dispatch controller's reconciles, from
	// controller-runtime's metrics.
	Reconciles            float64 `json:"reconciles"`
	ReconcilesPerDispatch float64 `json:"reconcilesPerDispatch"`
	// QueueWait is how long work waited in the dispatch controller's
	// queue, and Pass how long its passes took, requests included: beside
	// the latency, what of it was Courier's.
	QueueWait Spread `json:"queueWait"`
	Pass      Spread `json:"pass"`
	// WorkerWrites is how long Courier's writes to workers took, up to
	// the response headers: the API servers' share of a pass.
	WorkerWrites Spread `json:"workerWrites"`
	// Manager and Workers count Courier's requests from the audit logs,
	// Workers summed over all workers.
	Manager Requests `json:"managerRequests"`
	Workers Requests `json:"workerRequests"`
	// PerWorkload divides the request counts by the phase's workloads.
	PerWorkload struct {
		ManagerReads  float64 `json:"managerReads"`
		ManagerWrites float64 `json:"managerWrites"`
		WorkerReads   float64 `json:"workerReads"`
		WorkerWrites  float64 `json:"workerWrites"`
	} `json:"requestsPerWorkload"`
}

// window is the state of Courier and of the audit logs at a phase's start.
type window struct {
	start   time.Time
	offsets []int64
	cpu     time.Duration
	machine machineCPU
	stack   map[string]time.Duration
	metrics courierMetrics
}

// open resets Courier's peak RSS and marks where the phase starts in its
// CPU time, its reconcile count and the audit logs.
func (r *runner) open(ctx context.Context) (window, error) {
	offsets, err := r.env.auditOffsets()
	if err != nil {
		return window{}, err
	}
	w := window{start: time.Now(), offsets: offsets}
	if w.machine, err = readMachineCPU(); err != nil {
		return w, err
	}
	if w.stack, err = r.stackCPU(r.courier.PID); err != nil {
		return w, err
	}
	if err := resetPeakRSS(r.courier.PID); err != nil {
		return w, err
	}
	s, err := readProc(r.courier.PID)
	if err != nil {
		return w, err
	}
	w.cpu = s.CPU
	if w.metrics, err = scrapeCourier(ctx, r.courier.MetricsAddress); err != nil {
		return w, err
	}
	return w, nil
}

// close measures what Courier spent since w opened, for dispatches
// workloads.
func (r *runner) close(ctx context.Context, w window, dispatches int) (Cost, error) {
	end := time.Now()
	var c Cost
	s, err := readProc(r.courier.PID)
	if err != nil {
		return c, err
	}
	machine, err := readMachineCPU()
	if err != nil {
		return c, err
	}
	c.MachineBusy = busyShare(w.machine, machine)
	stack, err := r.stackCPU(r.courier.PID)
	if err != nil {
		return c, err
	}
	c.Stack = stackShares(w.stack, stack, end.Sub(w.start))
	metrics, err := scrapeCourier(ctx, r.courier.MetricsAddress)
	if err != nil {
		return c, err
	}
	select {
	case <-time.After(auditFlush):
	case <-ctx.Done():
		return c, fmt.Errorf("waiting for the audit logs: %w", ctx.Err())
	}
	for i, l := range r.env.audit {
		counts, err := l.count(w.offsets[i], w.start, end)
		if err != nil {
			return c, err
		}
		if i == 0 {
			c.Manager.add(counts)
		} else {
			c.Workers.add(counts)
		}
	}
	d := float64(dispatches)
	c.Seconds = end.Sub(w.start).Seconds()
	c.CPUMillis = float64((s.CPU - w.cpu).Microseconds()) / 1000
	c.CPUMillisPerDispatch = c.CPUMillis / d
	c.PeakRSSBytes = s.PeakRSS
	c.Reconciles = metrics.reconciles - w.metrics.reconciles
	c.QueueWait = metrics.queueWait.since(w.metrics.queueWait).spread()
	c.Pass = metrics.pass.since(w.metrics.pass).spread()
	c.WorkerWrites = metrics.workerWrites.since(w.metrics.workerWrites).spread()
	c.ReconcilesPerDispatch = c.Reconciles / d
	c.PerWorkload.ManagerReads = float64(c.Manager.Reads) / d
	c.PerWorkload.ManagerWrites = float64(c.Manager.Writes) / d
	c.PerWorkload.WorkerReads = float64(c.Workers.Reads) / d
	c.PerWorkload.WorkerWrites = float64(c.Workers.Writes) / d
	return c, nil
}
