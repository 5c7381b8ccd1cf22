package benchstack

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// The machine probe is a fixed piece of CPU work the harness times before
// every phase, at rest, and through it. The same work taking more CPU time
// later in a run says the machine slowed, its clock or its neighbours on
// the host, not the stack's work per job; taking more through a phase than
// before it says the stack's processes slow one another as they share the
// cores and their caches.

const (
	// probeBytes are hashed with SHA-256 by each probe, 128 MiB: about a
	// tenth of a second of one core here, so that probing every
	// probeEvery takes under 1% of the machine. They are read twice over
	// from probeBuffer bytes, more than the processor's caches hold, so
	// that the probe waits on memory as the stack's processes do.
	probeBytes  = 128 << 20
	probeBuffer = 64 << 20
	probeChunk  = 1 << 20
	// probeEvery is how often the probe runs through a phase.
	probeEvery = 15 * time.Second
	// probesAtRest are run before a phase; the least CPU time counts, the
	// one the fewest interruptions inflated.
	probesAtRest = 3
	// rusageThread is RUSAGE_THREAD, which package syscall does not name:
	// the calling thread's CPU time alone.
	rusageThread = 1
)

// MachineCheck is what a phase shows of the machine itself: the probe's
// CPU time, in ms, at rest before the phase and the median of its runs
// through the phase, and the share of the machine's CPU its hypervisor
// gave to something else (counted busy too).
type MachineCheck struct {
	RestProbeCPUMs  float64 `json:"restProbeCPUMs"`
	PhaseProbeCPUMs float64 `json:"phaseProbeCPUMs,omitempty"`
	// PhaseProbeWallMs is the median wall time of the runs through the
	// phase: above their CPU time by the waits for a core.
	PhaseProbeWallMs float64 `json:"phaseProbeWallMs,omitempty"`
	PhaseProbeRuns   int     `json:"phaseProbeRuns"`
	Steal            float64 `json:"steal"`
}

// probeOnce does the probe's work on a thread of its own and returns the
// thread's CPU time and the wall time it took.
func probeOnce() (cpu, wall time.Duration, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	data := probeData()
	before, err := threadCPU()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	h := sha256.New()
	for i := range probeBytes / probeChunk {
		off := i * probeChunk % probeBuffer
		h.Write(data[off : off+probeChunk])
	}
	h.Sum(nil)
	wall = time.Since(start)
	after, err := threadCPU()
	if err != nil {
		return 0, 0, err
	}
	return after - before, wall, nil
}

// probeData is what the probe hashes, made once.
var probeData = sync.OnceValue(func() []byte {
	data := make([]byte, probeBuffer)
	for i := range data {
		data[i] = byte(i)
	}
	return data
})

// threadCPU is the calling thread's CPU time so far, user and system.
func threadCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, fmt.Errorf("reading the probe thread's CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// probeAtRest returns the least CPU time, in ms, of probesAtRest runs.
func probeAtRest() (float64, error) {
	least := time.Duration(-1)
	for range probesAtRest {
		cpu, _, err := probeOnce()
		if err != nil {
			return 0, err
		}
		if least < 0 || cpu < least {
			least = cpu
		}
	}
	return ms(least), nil
}

// phaseProber runs the probe at an interval through a phase and keeps
// the times of its runs.
type phaseProber struct {
	cancel  context.CancelFunc
	stopped chan struct{}

	mu        sync.Mutex
	cpu, wall []float64
	err       error
}

// startProber runs the probe every interval until stop.
func startProber(ctx context.Context, every time.Duration) *phaseProber {
	ctx, cancel := context.WithCancel(ctx)
	p := &phaseProber{cancel: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(p.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cpu, wall, err := probeOnce()
			p.mu.Lock()
			if err != nil {
				p.err = err
			} else {
				p.cpu, p.wall = append(p.cpu, ms(cpu)), append(p.wall, ms(wall))
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// stop ends the probing and fills the phase's medians into m.
func (p *phaseProber) stop(m *MachineCheck) error {
	p.cancel()
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	m.PhaseProbeRuns = len(p.cpu)
	m.PhaseProbeCPUMs, m.PhaseProbeWallMs = statOf(p.cpu).Median, statOf(p.wall).Median
	return p.err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
