package benchstack

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
	procs[harnessProcess] = os.Getpid()
	return procs, nil
}

const harnessProcess = "courier-bench (this harness)"

// The sides of a system's cost. The manager side is what a system runs on
// the manager to dispatch: for Courier, Courier and the manager's Kueue,
// which admits; for MultiKueue, the manager's Kueue, which admits and
// dispatches in one process; with the manager's API server and etcd,
// which serve them. The worker side is the workers' API servers and
// etcds, which serve the dispatcher and the workers' own controllers.
// The Courier process, idle but watching the manager through MultiKueue's
// phases, is in neither side of MultiKueue's: it would not run there.
func sideProcesses(sys System, env *localcluster.Env) (manager, worker []string) {
	manager = []string{env.Manager + "/kube-apiserver", env.Manager + "/etcd", localcluster.KueueProcess}
	if sys.Process != "" && sys.Process != localcluster.KueueProcess {
		manager = append(manager, sys.Process)
	}
	for _, w := range env.Workers {
		worker = append(worker, w+"/kube-apiserver", w+"/etcd")
	}
	slices.Sort(manager)
	return manager, worker
}

// meter measures, over a phase, the CPU of every process of the stack and
// of the machine, the resident memory of every process and of each side,
// sampled every half second, and the machine's load average.
type meter struct {
	procs    map[string]int
	sides    map[string][]string
	before   map[string]float64
	machine0 machineTimes
	start    time.Time
	done     chan struct{}
	stopped  chan struct{}

	mu        sync.Mutex
	peakKiB   map[string]uint64
	startKiB  map[string]uint64
	sidePeak  map[string]uint64
	sideStart map[string]uint64
	load      []float64
}

// The sides, by name.
const (
	sideManager = "manager"
	sideWorker  = "worker"
)

func startMeter(ctx context.Context, procs map[string]int, sides map[string][]string) (*meter, error) {
	m := &meter{procs: procs, sides: sides, before: map[string]float64{}, start: time.Now(),
		done: make(chan struct{}), stopped: make(chan struct{}),
		peakKiB: map[string]uint64{}, startKiB: map[string]uint64{}, sidePeak: map[string]uint64{}, sideStart: map[string]uint64{}}
	for _, names := range sides {
		for _, name := range names {
			if _, ok := procs[name]; !ok {
				return nil, fmt.Errorf("no process %s in the stack", name)
			}
		}
	}
	for name, pid := range procs {
		s, err := processCPU(pid)
		if err != nil {
			return nil, fmt.Errorf("measuring %s: %w", name, err)
		}
		m.before[name] = s
	}
	var err error
	if m.machine0, err = machineCPU(); err != nil {
		return nil, err
	}
	m.sample(true)
	go func() {
		defer close(m.stopped)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				m.sample(false)
			case <-m.done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return m, nil
}

// sample reads every process's resident memory and the load average.
func (m *meter) sample(first bool) {
	rss := map[string]uint64{}
	for name, pid := range m.procs {
		if kib, err := processRSS(pid); err == nil {
			rss[name] = kib
		}
	}
	load, loadErr := loadAverage()
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, kib := range rss {
		m.peakKiB[name] = max(m.peakKiB[name], kib)
		if first {
			m.startKiB[name] = kib
		}
	}
	for side, names := range m.sides {
		var sum uint64
		for _, n := range names {
			sum += rss[n]
		}
		m.sidePeak[side] = max(m.sidePeak[side], sum)
		if first {
			m.sideStart[side] = sum
		}
	}
	if loadErr == nil {
		m.load = append(m.load, load)
	}
}

// measureRest returns each side's CPU at rest, in cores: its processes'
// CPU seconds over window, with no job of the harness's in flight, per
// second of it. A steady rate's phase costs each side its rest too, for
// every system alike; the phase's CPU above it is what the jobs cost.
func measureRest(ctx context.Context, procs map[string]int, sides map[string][]string, window time.Duration) (map[string]float64, error) {
	cpu := func() (map[string]float64, error) {
		seconds := map[string]float64{}
		for side, names := range sides {
			for _, name := range names {
				s, err := processCPU(procs[name])
				if err != nil {
					return nil, fmt.Errorf("measuring %s at rest: %w", name, err)
				}
				seconds[side] += s
			}
		}
		return seconds, nil
	}
	before, err := cpu()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := cpu()
	if err != nil {
		return nil, err
	}
	wall := time.Since(start).Seconds()
	cores := map[string]float64{}
	for side := range sides {
		cores[side] = (after[side] - before[side]) / wall
	}
	return cores, nil
}

// stop ends the measure and fills the CPU, memory and load of res; rest
// holds each side's CPU at rest before the phase, in cores, if measured.
func (m *meter) stop(res *PhaseResult, sys System, jobs int, rest map[string]float64) {
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
	if now, err := machineCPU(); err == nil {
		var steal float64
		res.MachineBusy, steal = now.since(m.machine0)
		if res.Machine != nil {
			res.Machine.Steal = steal
		}
	}
	res.CPU = benchreport.CPUShares(seconds, wall, runtime.NumCPU())
	var stack float64
	for _, s := range seconds {
		stack += s
	}
	if wall > 0 {
		res.OutsideStack = max(res.MachineBusy-stack/(wall*float64(runtime.NumCPU())), 0)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	res.LoadAverage = summarizeLoad(m.load)
	res.Sides = map[string]SideCost{}
	for side, names := range m.sides {
		c := sideCost(names, seconds, m.sidePeak[side], m.sideStart[side], jobs)
		if cores, ok := rest[side]; ok {
			c.Rest = aboveRest(c, cores, wall, jobs)
		}
		res.Sides[side] = c
	}
	res.Dispatcher = DispatcherCost{Process: sys.Process, Note: sys.Note, CPUSeconds: seconds[sys.Process],
		CPUMsPerWorkload: perJobMs(seconds[sys.Process], jobs), PeakRSSMiB: float64(m.peakKiB[sys.Process]) / 1024}
	if sys.Process != localcluster.CourierProcess {
		// Courier runs idle beside MultiKueue, in neither of its sides.
		res.IdleCourier = &DispatcherCost{Process: localcluster.CourierProcess, CPUSeconds: seconds[localcluster.CourierProcess],
			CPUMsPerWorkload: perJobMs(seconds[localcluster.CourierProcess], jobs), PeakRSSMiB: float64(m.peakKiB[localcluster.CourierProcess]) / 1024}
	}
}

func perJobMs(seconds float64, jobs int) float64 {
	if jobs == 0 {
		return 0
	}
	return 1000 * seconds / float64(jobs)
}

// SideCost is one side's CPU and memory over a phase.
type SideCost struct {
	// Processes are the side's processes.
	Processes []string `json:"processes"`
	// CPUSeconds are theirs together, CPUMsPerJob per job of the phase.
	CPUSeconds  float64 `json:"cpuSeconds"`
	CPUMsPerJob float64 `json:"cpuMsPerJob"`
	// PeakRSSMiB is the largest sum of their resident memory sampled;
	// GrowthKiBPerJob is how far it rose above the sum at the phase's
	// start, per job.
	PeakRSSMiB      float64 `json:"peakRSSMiB"`
	GrowthKiBPerJob float64 `json:"growthKiBPerJob"`
	// Rest is the side at rest just before the phase, when measured.
	Rest *RestCost `json:"rest,omitempty"`
}

// RestCost is a side's CPU at rest, and the phase's CPU above it.
type RestCost struct {
	// Cores is the side's CPU seconds per second at rest.
	Cores float64 `json:"cores"`
	// AboveMsPerJob is the side's CPU per job less what its rest would
	// have cost over the phase; at least 0.
	AboveMsPerJob float64 `json:"aboveMsPerJob"`
}

// aboveRest tells c's CPU above a rest of cores over a phase of wall
// seconds.
func aboveRest(c SideCost, cores, wall float64, jobs int) *RestCost {
	return &RestCost{Cores: cores, AboveMsPerJob: perJobMs(max(c.CPUSeconds-cores*wall, 0), jobs)}
}

// sideCost sums a side's processes.
func sideCost(names []string, seconds map[string]float64, peakKiB, startKiB uint64, jobs int) SideCost {
	c := SideCost{Processes: names, PeakRSSMiB: float64(peakKiB) / 1024}
	for _, n := range names {
		c.CPUSeconds += seconds[n]
	}
	c.CPUMsPerJob = perJobMs(c.CPUSeconds, jobs)
	if jobs > 0 && peakKiB > startKiB {
		c.GrowthKiBPerJob = float64(peakKiB-startKiB) / float64(jobs)
	}
	return c
}

// LoadAverage is the machine's one-minute load average over a phase,
// sampled every half second: what else ran shows here too.
type LoadAverage struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

func summarizeLoad(samples []float64) LoadAverage {
	if len(samples) == 0 {
		return LoadAverage{}
	}
	var l LoadAverage
	for _, s := range samples {
		l.Mean += s
		l.Max = max(l.Max, s)
	}
	l.Mean /= float64(len(samples))
	return l
}

// loadAverage reads the one-minute load average.
func loadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, fmt.Errorf("reading the load average: %w", err)
	}
	return parseLoadAverage(string(data))
}

func parseLoadAverage(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("parsing the load average %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("parsing the load average: %w", err)
	}
	return v, nil
}
