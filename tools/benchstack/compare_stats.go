package benchstack

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/courierdev/courier/tools/benchreport"
	"github.com/courierdev/courier/tools/localcluster"
)

// Stat is one figure over the repeats: its median, least and greatest.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// statOf summarizes values; an even count's median is the mean of the two
// middle ones.
func statOf(values []float64) Stat {
	if len(values) == 0 {
		return Stat{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	median := s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return Stat{Median: median, Min: s[0], Max: s[n-1], N: n}
}

// rotation is the order the systems run in, in a repeat: each repeat
// starts one later, so that each system runs first, second and third
// once in three repeats.
func rotation(systems []string, repeat int) []string {
	if len(systems) == 0 {
		return nil
	}
	k := repeat % len(systems)
	return append(slices.Clone(systems[k:]), systems[:k]...)
}

// figure is one number a phase yields, summarized over the repeats.
type figure struct {
	key, label, format string
	get                func(p *PhaseResult) (float64, bool)
}

func always(f func(p *PhaseResult) float64) func(p *PhaseResult) (float64, bool) {
	return func(p *PhaseResult) (float64, bool) { return f(p), true }
}

// percentileFigures are p50, p95 and p99 of one latency, in seconds.
func percentileFigures(key, label string, get func(p *PhaseResult) benchreport.Percentiles) []figure {
	return []figure{
		{key + ".p50", label + ", p50 (s)", "%.1f", always(func(p *PhaseResult) float64 { return get(p).P50 })},
		{key + ".p95", label + ", p95 (s)", "%.1f", always(func(p *PhaseResult) float64 { return get(p).P95 })},
		{key + ".p99", label + ", p99 (s)", "%.1f", always(func(p *PhaseResult) float64 { return get(p).P99 })},
	}
}

// dispatched leaves the figures fs out of the phases of a system with no
// dispatcher (the floor), where nothing runs on a worker and no process
// dispatches.
func dispatched(fs ...figure) []figure {
	out := make([]figure, len(fs))
	for i, f := range fs {
		get := f.get
		f.get = func(p *PhaseResult) (float64, bool) {
			if Systems[p.System].Process == "" {
				return 0, false
			}
			return get(p)
		}
		out[i] = f
	}
	return out
}

// requestFigures are one identity's requests per job, by kind.
func requestFigures(key, label string, get func(p *PhaseResult) (APIRequests, bool)) []figure {
	kind := func(k, l, format string, of func(t RequestTotals) float64) figure {
		return figure{key + "." + k, label + ": " + l, format, func(p *PhaseResult) (float64, bool) {
			r, ok := get(p)
			if !ok || p.Jobs == 0 {
				return 0, false
			}
			return of(r.Totals()) / float64(p.Jobs), true
		}}
	}
	return []figure{
		kind("writes", "writes per job", "%.2f", func(t RequestTotals) float64 { return t.Writes }),
		kind("gets", "GETs per job", "%.2f", func(t RequestTotals) float64 { return t.Gets }),
		kind("lists", "LISTs per job", "%.2f", func(t RequestTotals) float64 { return t.Lists }),
		kind("watches", "WATCHes opened per job", "%.2f", func(t RequestTotals) float64 { return t.WatchesOpened }),
		kind("events", "watch events received per job", "%.1f", func(t RequestTotals) float64 { return t.WatchEvents }),
		kind("kib", "watch KiB received per job", "%.1f", func(t RequestTotals) float64 { return t.WatchBytes / 1024 }),
		kind("all", "requests and watch events per job", "%.1f", allRequests),
	}
}

// courierWatchFigures are the watch events the Courier process counted
// reading from one side, and their KiB, per job: the check on the
// estimates of the requests' watch rows, which share the API servers'
// totals among the watches.
func courierWatchFigures(side, from string) []figure {
	one := func(name, label, format string, value func(watchTotal) float64) figure {
		return figure{"courierWatch." + side + "." + name, from + ", the Courier process's own count: " + label, format, func(p *PhaseResult) (float64, bool) {
			if p.CourierWatch == nil {
				return 0, false
			}
			return value(p.CourierWatch.From(side)), true
		}}
	}
	return []figure{
		one("events", "watch events received per job", "%.1f", func(t watchTotal) float64 { return t.Events }),
		one("kib", "watch KiB received per job", "%.1f", func(t watchTotal) float64 { return t.Bytes / 1024 }),
	}
}

// managerRequests are the requests of program to the manager.
func managerRequests(program string) func(p *PhaseResult) (APIRequests, bool) {
	return func(p *PhaseResult) (APIRequests, bool) {
		return p.ManagerRequests.Of(program, ""), p.ManagerRequests.ByIdentity != nil
	}
}

// dispatcherWorkerRequests are the dispatcher's requests to the workers.
func dispatcherWorkerRequests(p *PhaseResult) (APIRequests, bool) {
	return p.WorkerRequests.Of(Systems[p.System].Program, localcluster.WorkerUser), p.WorkerRequests.ByIdentity != nil
}

func sideFigure(side, key, label, format string, get func(c SideCost) float64) figure {
	return figure{side + "." + key, label, format, func(p *PhaseResult) (float64, bool) {
		c, ok := p.Sides[side]
		return get(c), ok
	}}
}

// restFigure is a side's figure at rest, absent where rest was not
// measured.
func restFigure(side, key, label, format string, get func(r RestCost) float64) figure {
	return figure{side + "." + key, label, format, func(p *PhaseResult) (float64, bool) {
		c, ok := p.Sides[side]
		if !ok || c.Rest == nil {
			return 0, false
		}
		return get(*c.Rest), true
	}}
}

// processFigure is one process's CPU per job.
func processFigure(process, label string) figure {
	return figure{"process." + process, label + ": CPU ms per job", "%.1f", func(p *PhaseResult) (float64, bool) {
		for _, c := range p.CPU {
			if c.Name == process {
				return perJobMs(c.CPUSeconds, p.Jobs), true
			}
		}
		return 0, false
	}}
}

// stackCPU is every process's CPU in the phase per job, absent when the
// phase measured none.
func stackCPU(p *PhaseResult) (float64, bool) {
	var seconds float64
	for _, c := range p.CPU {
		seconds += c.CPUSeconds
	}
	return perJobMs(seconds, p.Jobs), len(p.CPU) > 0
}

// figures are every number of the comparison table, in its order.
var figures = slices.Concat(
	[]figure{{"throughput", "Throughput: jobs complete per second, first submission to last complete", "%.2f",
		always(func(p *PhaseResult) float64 { return p.Throughput })}},
	percentileFigures("submitToReady", "Submission → check Ready", func(p *PhaseResult) benchreport.Percentiles { return p.SubmitToReady }),
	dispatched(percentileFigures("submitToRunning", "Submission → job running on its worker", func(p *PhaseResult) benchreport.Percentiles { return p.SubmitToRunning })...),
	percentileFigures("submitToComplete", "Submission → job complete on the manager", func(p *PhaseResult) benchreport.Percentiles { return p.SubmitToComplete }),
	[]figure{
		{"quotaToReady.p50", "Quota reserved → check Ready, the dispatcher's own share, p50 (s)", "%.2f", always(func(p *PhaseResult) float64 { return p.QuotaToReady.P50 })},
		{"quotaToReady.p95", "Quota reserved → check Ready, the dispatcher's own share, p95 (s)", "%.2f", always(func(p *PhaseResult) float64 { return p.QuotaToReady.P95 })},
		sideFigure(sideManager, "cpu", "Manager side: CPU ms per job", "%.1f", func(c SideCost) float64 { return c.CPUMsPerJob }),
		restFigure(sideManager, "restCores", "Manager side: CPU at rest before the phase (cores)", "%.2f", func(r RestCost) float64 { return r.Cores }),
		restFigure(sideManager, "aboveRest", "Manager side: CPU ms per job above its rest", "%.1f", func(r RestCost) float64 { return r.AboveMsPerJob }),
		sideFigure(sideManager, "rss", "Manager side: peak RSS (MiB)", "%.0f", func(c SideCost) float64 { return c.PeakRSSMiB }),
		sideFigure(sideManager, "growth", "Manager side: RSS growth per job (KiB)", "%.1f", func(c SideCost) float64 { return c.GrowthKiBPerJob }),
		sideFigure(sideWorker, "cpu", "Worker side: CPU ms per job", "%.1f", func(c SideCost) float64 { return c.CPUMsPerJob }),
		restFigure(sideWorker, "aboveRest", "Worker side: CPU ms per job above its rest", "%.1f", func(r RestCost) float64 { return r.AboveMsPerJob }),
		sideFigure(sideWorker, "rss", "Worker side: peak RSS (MiB)", "%.0f", func(c SideCost) float64 { return c.PeakRSSMiB }),
		sideFigure(sideWorker, "growth", "Worker side: RSS growth per job (KiB)", "%.1f", func(c SideCost) float64 { return c.GrowthKiBPerJob }),
		// On a saturated machine the throughput is about its cores over
		// this, so the table shows what the whole machine spent per job.
		{"stack.cpu", "The whole stack, every process the bench runs, the harness included: CPU ms per job", "%.1f", stackCPU},
	},
	dispatched(figure{"dispatcher.cpu", "The dispatcher's process alone: CPU ms per job", "%.1f", always(func(p *PhaseResult) float64 { return p.Dispatcher.CPUMsPerWorkload })}),
	[]figure{
		processFigure(localcluster.CourierProcess, "The Courier process (idle in MultiKueue's phases)"),
		// Passes are what Courier's own CPU follows, so the table shows them
		// beside it; idle, they should stay at zero.
		{"courier.passes", "The Courier process (idle in MultiKueue's phases): dispatch passes per job", "%.2f", func(p *PhaseResult) (float64, bool) {
			return p.PassesPerWorkload, p.CourierWatch != nil
		}},
		processFigure(localcluster.KueueProcess, "The manager's Kueue"),
		processFigure("manager/kube-apiserver", "The manager's API server"),
		processFigure("manager/etcd", "The manager's etcd"),
		processFigure(harnessProcess, "The harness (courier-bench)"),
	},
	requestFigures("toWorkers", "To the workers, the dispatcher", dispatcherWorkerRequests),
	courierWatchFigures(watchFromWorkers, "From the workers"),
	requestFigures("courierToManager", "To the manager, Courier (idle in MultiKueue's phases)", managerRequests("courier")),
	courierWatchFigures(watchFromManager, "From the manager"),
	requestFigures("kueueToManager", "To the manager, the manager's Kueue", managerRequests("kueue")),
	[]figure{
		{"kueue.peakQPS", "The manager's Kueue's busiest second to the manager (requests)", "%.0f", func(p *PhaseResult) (float64, bool) {
			r, ok := managerRequests("kueue")(p)
			return float64(r.PeakQPS), ok
		}},
		{"machine.busy", "Machine busy (%)", "%.0f", always(func(p *PhaseResult) float64 { return 100 * p.MachineBusy })},
		{"machine.outside", "Machine busy outside the stack (%)", "%.0f", always(func(p *PhaseResult) float64 { return 100 * p.OutsideStack })},
		{"machine.steal", "Machine CPU its host gave to others (%)", "%.1f", machineFigure(func(m *MachineCheck) float64 { return 100 * m.Steal })},
		{"machine.probeRest", "Machine probe at rest before the phase: CPU ms of a fixed work", "%.0f", machineFigure(func(m *MachineCheck) float64 { return m.RestProbeCPUMs })},
		{"machine.probePhase", "Machine probe through the phase: median CPU ms of the same work", "%.0f", machineFigure(func(m *MachineCheck) float64 { return m.PhaseProbeCPUMs })},
		{"machine.load", "Load average (1 min), mean over the phase", "%.1f", always(func(p *PhaseResult) float64 { return p.LoadAverage.Mean })},
		{"machine.loadMax", "Load average (1 min), highest", "%.1f", always(func(p *PhaseResult) float64 { return p.LoadAverage.Max })},
		{"invariants", "Jobs that broke an invariant", "%.0f", always(func(p *PhaseResult) float64 { return float64(p.Invariants.Broken()) })},
	},
)

// SystemSummary is one system under one load over the repeats.
type SystemSummary struct {
	System  string          `json:"system"`
	Label   string          `json:"label"`
	Repeats int             `json:"repeats"`
	Figures map[string]Stat `json:"figures"`
	// ManagerWrites are the writes to the manager per job, by program and
	// call ("courier: patch workloads.kueue.x-k8s.io/status"), those
	// refused with 409 as "... (409)" and other failures as "...
	// (failed)"; dry runs are marked.
	ManagerWrites map[string]Stat `json:"managerWrites"`
	// CourierWatch are the watch events the Courier process read per job,
	// as it counts them, by side and kind ("manager Workload.kueue.x-k8s.io").
	CourierWatch map[string]Stat `json:"courierWatch,omitempty"`
	// Unfinished and Broken add the repeats up.
	Unfinished int `json:"unfinished"`
	Broken     int `json:"broken"`
}

// LoadSummary is every system under one load.
type LoadSummary struct {
	Load    string          `json:"load"`
	Jobs    int             `json:"jobs"`
	Kind    string          `json:"kind"`
	Rate    float64         `json:"rate,omitempty"`
	Batch   bool            `json:"batch,omitempty"`
	Systems []SystemSummary `json:"systems"`
}

// system returns the summary of one system, or nil.
func (l LoadSummary) system(name string) *SystemSummary {
	for i := range l.Systems {
		if l.Systems[i].System == name {
			return &l.Systems[i]
		}
	}
	return nil
}

// summarizeRepeats groups the phases by load, in the loads' order, and by
// system, in SystemOrder, and summarizes each figure over the repeats.
func summarizeRepeats(loads []Load, phases []PhaseResult) []LoadSummary {
	var out []LoadSummary
	for _, l := range loads {
		ls := LoadSummary{Load: l.Name, Jobs: l.Jobs, Kind: l.kind(), Rate: l.Rate, Batch: l.Batch}
		for _, name := range SystemOrder {
			var of []*PhaseResult
			for i := range phases {
				if phases[i].Load == l.Name && phases[i].System == name {
					of = append(of, &phases[i])
				}
			}
			if len(of) > 0 {
				ls.Systems = append(ls.Systems, summarizeSystem(Systems[name], of))
			}
		}
		if len(ls.Systems) > 0 {
			out = append(out, ls)
		}
	}
	return out
}

func summarizeSystem(sys System, phases []*PhaseResult) SystemSummary {
	s := SystemSummary{System: sys.Name, Label: sys.Label, Repeats: len(phases), Figures: map[string]Stat{}}
	for _, f := range figures {
		var values []float64
		for _, p := range phases {
			if v, ok := f.get(p); ok {
				values = append(values, v)
			}
		}
		if len(values) > 0 {
			s.Figures[f.key] = statOf(values)
		}
	}
	for _, p := range phases {
		s.Unfinished += len(p.Unfinished)
		s.Broken += p.Invariants.Broken()
	}
	s.ManagerWrites = summarizeKeyed(phases, managerWritesPerJob)
	s.CourierWatch = summarizeKeyed(phases, courierWatchPerJob)
	return s
}

// summarizeKeyed summarizes, key by key, figures each phase has by key; a
// key a phase lacks counts 0 there.
func summarizeKeyed(phases []*PhaseResult, of func(*PhaseResult) map[string]float64) map[string]Stat {
	byPhase := make([]map[string]float64, len(phases))
	keys := map[string]bool{}
	for i, p := range phases {
		byPhase[i] = of(p)
		for k := range byPhase[i] {
			keys[k] = true
		}
	}
	out := map[string]Stat{}
	for k := range keys {
		values := make([]float64, len(phases))
		for i := range phases {
			values[i] = byPhase[i][k]
		}
		out[k] = statOf(values)
	}
	return out
}

// courierWatchPerJob are the watch events the Courier process read per
// job, by side and kind.
func courierWatchPerJob(p *PhaseResult) map[string]float64 {
	out := map[string]float64{}
	if p.CourierWatch != nil {
		for k, t := range p.CourierWatch.ByKind {
			out[k] = t.Events
		}
	}
	return out
}

// managerWritesPerJob are Courier's and the manager Kueue's writes to the
// manager per job, by "program: call", and those refused or failed.
func managerWritesPerJob(p *PhaseResult) map[string]float64 {
	out := map[string]float64{}
	if p.Jobs == 0 {
		return out
	}
	for _, program := range []string{"courier", "kueue", floorProgram} {
		r := p.ManagerRequests.Of(program, "")
		for _, c := range slices.Sorted(maps.Keys(r.ByCall)) {
			verb, _, _ := strings.Cut(c, " ")
			if !isWrite(verb) {
				continue
			}
			n := r.ByCall[c]
			out[fmt.Sprintf("%s: %s", program, c)] = float64(n.N) / float64(p.Jobs)
			if n.Conflict > 0 {
				out[fmt.Sprintf("%s: %s (409)", program, c)] = float64(n.Conflict) / float64(p.Jobs)
			}
			for writer, k := range n.LostTo {
				out[fmt.Sprintf("%s: %s (409, lost to %s)", program, c, writer)] = float64(k) / float64(p.Jobs)
			}
			if n.Failed > 0 {
				out[fmt.Sprintf("%s: %s (failed)", program, c)] = float64(n.Failed) / float64(p.Jobs)
			}
		}
	}
	return out
}

// machineFigure is a figure of a phase's MachineCheck, if it has one.
func machineFigure(get func(*MachineCheck) float64) func(*PhaseResult) (float64, bool) {
	return func(p *PhaseResult) (float64, bool) {
		if p.Machine == nil {
			return 0, false
		}
		return get(p.Machine), true
	}
}
