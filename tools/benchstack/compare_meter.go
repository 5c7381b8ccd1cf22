package benchstack

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
	"github.com/courierdev/courier/tools/localcluster"
)

// stackPIDs are every process of the stack by name: the recorded peers
// and Courier, each cluster's components, and this harness.
func stackPIDs(env *localcluster.Env) (map[string]int, error) {
	procs, err := env.ProcessPIDs()
	if err != nil {
		return nil, err
	}
	for _, c := range append([]string{env.Manager}, env.Workers...) {
		comps, err := env.ComponentPIDs(c)
		if err != nil {
			return nil, err
		}
		for name, pid := range comps {
			procs[c+"/"+name] = pid
		}
	}
	procs["courier-bench (this harness)"] = os.Getpid()
	return procs, nil
}

// meter measures the CPU of every process over a phase, the machine's, and
// the dispatcher's peak resident memory, sampled every half second.
type meter struct {
	procs       map[string]int
	before      map[string]float64
	busy0, all0 float64
	dispatcher  string
	mu          sync.Mutex
	peakKiB     uint64
	done        chan struct{}
	stopped     chan struct{}
	start       time.Time
}

func startMeter(ctx context.Context, procs map[string]int, dispatcher string) (*meter, error) {
	m := &meter{procs: procs, before: map[string]float64{}, dispatcher: dispatcher, done: make(chan struct{}), stopped: make(chan struct{}), start: time.Now()}
	for name, pid := range procs {
		s, err := processCPU(pid)
		if err != nil {
			return nil, fmt.Errorf("measuring %s: %w", name, err)
		}
		m.before[name] = s
	}
	var err error
	if m.busy0, m.all0, err = machineCPU(); err != nil {
		return nil, err
	}
	pid, ok := procs[dispatcher]
	if !ok {
		return nil, fmt.Errorf("no process %s in the stack", dispatcher)
	}
	go func() {
		defer close(m.stopped)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := processRSS(pid); err == nil {
				m.mu.Lock()
				m.peakKiB = max(m.peakKiB, rss)
				m.mu.Unlock()
			}
			select {
			case <-tick.C:
			case <-m.done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return m, nil
}

// stop ends the measure and fills the CPU and the dispatcher's cost of res.
func (m *meter) stop(res *PhaseResult, sys System, jobs int) {
	close(m.done)
	<-m.stopped
	wall := time.Since(m.start).Seconds()
	seconds := map[string]float64{}
	for name, pid := range m.procs {
		s, err := processCPU(pid)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s exited during the phase", name))
			continue
		}
		seconds[name] = s - m.before[name]
	}
	if busy, all, err := machineCPU(); err == nil && all > m.all0 {
		res.MachineBusy = (busy - m.busy0) / (all - m.all0)
	}
	res.CPU = benchreport.CPUShares(seconds, wall, runtime.NumCPU())
	m.mu.Lock()
	defer m.mu.Unlock()
	res.Dispatcher = DispatcherCost{Process: m.dispatcher, Note: sys.Note, CPUSeconds: seconds[m.dispatcher],
		CPUMsPerWorkload: 1000 * seconds[m.dispatcher] / float64(jobs), PeakRSSMiB: float64(m.peakKiB) / 1024}
}
