package benchscale

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	// Reconciles counts the dispatch controller's reconciles, from
	// controller-runtime's metrics.
	Reconciles            float64 `json:"reconciles"`
	ReconcilesPerDispatch float64 `json:"reconcilesPerDispatch"`
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
	start      time.Time
	offsets    []int64
	cpu        time.Duration
	machine    machineCPU
	reconciles float64
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
	if err := resetPeakRSS(r.courier.PID); err != nil {
		return w, err
	}
	s, err := readProc(r.courier.PID)
	if err != nil {
		return w, err
	}
	w.cpu = s.CPU
	if w.reconciles, err = scrapeReconciles(ctx, r.courier.MetricsAddress); err != nil {
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
	reconciles, err := scrapeReconciles(ctx, r.courier.MetricsAddress)
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
	c.Reconciles = reconciles - w.reconciles
	c.ReconcilesPerDispatch = c.Reconciles / d
	c.PerWorkload.ManagerReads = float64(c.Manager.Reads) / d
	c.PerWorkload.ManagerWrites = float64(c.Manager.Writes) / d
	c.PerWorkload.WorkerReads = float64(c.Workers.Reads) / d
	c.PerWorkload.WorkerWrites = float64(c.Workers.Writes) / d
	return c, nil
}

// dispatchController is the name of Courier's dispatch controller in
// controller-runtime's metrics.
const dispatchController = `controller="dispatch"`

// scrapeReconciles sums controller_runtime_reconcile_total of the dispatch
// controller over its results.
func scrapeReconciles(ctx context.Context, addr string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scraping Courier's metrics: %s", resp.Status)
	}
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") || !strings.Contains(line, dispatchController) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("scraping Courier's metrics: %q: %w", line, err)
		}
		total += v
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	return total, nil
}
