package benchstack

import (
	"fmt"
	"strings"

	"github.com/courierdev/courier/tools/benchreport"
)

// The comparison's targets (issue 41, and issue 12's that still stand),
// judged on the medians of the repeats. "The better MultiKueue" is, for
// each figure, the MultiKueue build with the better median of it.
const (
	// throughputRatio: at the largest burst, Courier's throughput is at
	// least this multiple of the better MultiKueue's; completeRatio: its
	// p95 from submission to complete at most this share of it.
	throughputRatio = 1.5
	completeRatio   = 0.7
	// managerCPURatio: the manager side's CPU per job is at most this
	// share of the better MultiKueue's.
	managerCPURatio = 0.6
	// maxManagerWrites bounds Courier's writes to the manager per job.
	maxManagerWrites = 6.0
	// maxCompareRequests bounds Courier's gets and writes to the workers
	// per job, and maxCPUMs the Courier process's CPU per job (issue 12).
	maxCompareRequests = 4.0
	maxCPUMs           = 10.0
)

// compareVerdicts judges the summaries against the targets. A target
// whose phases did not run is SKIP.
func compareVerdicts(loads []LoadSummary) []benchreport.Verdict {
	var out []benchreport.Verdict
	var largest *LoadSummary
	for i := range loads {
		l := &loads[i]
		if !l.Batch && l.Rate == 0 && (largest == nil || l.Jobs > largest.Jobs) {
			largest = l
		}
	}
	if largest == nil {
		out = append(out, benchreport.Skip("at the largest burst: Courier's throughput ≥ 1.5× the better MultiKueue's", "no burst ran"),
			benchreport.Skip("at the largest burst: Courier's p95 submission → complete ≤ 0.7× the better MultiKueue's", "no burst ran"))
	} else {
		throughput := versusMultiKueue(*largest, "throughput", true, throughputRatio,
			fmt.Sprintf("%s: Courier's throughput ≥ %.1f× the better MultiKueue's", largest.Load, throughputRatio), "%.2f/s")
		if throughput.Status != "SKIP" {
			throughput.Detail += freeNote(*largest, "throughput", throughputRatio, "%.2f/s")
		}
		out = append(out, throughput,
			versusMultiKueue(*largest, "submitToComplete.p95", false, completeRatio,
				fmt.Sprintf("%s: Courier's p95 submission → complete ≤ %.1f× the better MultiKueue's", largest.Load, completeRatio), "%.1f s"))
	}
	for _, l := range loads {
		if l.Batch {
			continue
		}
		v := versusMultiKueue(l, "manager.cpu", false, managerCPURatio,
			fmt.Sprintf("%s: manager side CPU per job ≤ %.1f× the better MultiKueue's", l.Load, managerCPURatio), "%.1f ms")
		if v.Status != "SKIP" {
			v.Detail += floorNote(l, "manager.cpu", managerCPURatio, "%.1f ms")
		}
		out = append(out, v)
	}
	out = append(out, courierEveryLoad(loads, fmt.Sprintf("Courier's writes to the manager ≤ %.0f per job", maxManagerWrites),
		func(s *SystemSummary) (bool, string) {
			st := s.Figures["courierToManager.writes"]
			return st.Median <= maxManagerWrites, fmt.Sprintf("%.2f", st.Median)
		}))
	for _, l := range loads {
		if l.Batch {
			continue
		}
		out = append(out, versusMultiKueue(l, "toWorkers.all", false, 1,
			l.Load+": Courier's requests and watch events to the workers fewer than the better MultiKueue's", "%.1f per job"))
	}
	out = append(out, courierEveryLoad(loads, fmt.Sprintf("Courier ≤ %.0f gets and writes to the workers per job (issue 12)", maxCompareRequests),
		func(s *SystemSummary) (bool, string) {
			n := s.Figures["toWorkers.gets"].Median + s.Figures["toWorkers.writes"].Median
			return n <= maxCompareRequests, fmt.Sprintf("%.2f", n)
		}))
	out = append(out, courierEveryLoad(loads, fmt.Sprintf("The Courier process ≤ %.0f ms CPU per job (issue 12)", maxCPUMs),
		func(s *SystemSummary) (bool, string) {
			st := s.Figures["dispatcher.cpu"]
			return st.Median <= maxCPUMs, fmt.Sprintf("%.1f ms", st.Median)
		}))
	for _, name := range SystemOrder {
		var broken, unfinished []string
		ran := false
		for _, l := range loads {
			s := l.system(name)
			if s == nil {
				continue
			}
			ran = true
			if s.Broken > 0 {
				broken = append(broken, fmt.Sprintf("%s: %d", l.Load, s.Broken))
			}
			if s.Unfinished > 0 {
				unfinished = append(unfinished, fmt.Sprintf("%s: %d", l.Load, s.Unfinished))
			}
		}
		if !ran {
			continue
		}
		detail := "none broken in any repeat"
		if len(broken) > 0 {
			detail = "jobs that broke one, over the repeats: " + strings.Join(broken, ", ")
		}
		if len(unfinished) > 0 {
			detail += "; of the jobs that finished (not finished within the time limit: " + strings.Join(unfinished, ", ") + ")"
		}
		out = append(out, benchreport.Check(len(broken) == 0, Systems[name].Label+": no invariant broken", detail))
	}
	return out
}

// versusMultiKueue compares Courier's median of a figure with the better
// MultiKueue's: higher is better when higher, and Courier's must be at
// least ratio times it; else at most ratio times it (ratio 1: fewer).
func versusMultiKueue(l LoadSummary, key string, higher bool, ratio float64, target, format string) benchreport.Verdict {
	c, mk := l.system(SystemCourier), betterMultiKueue(l, key, higher)
	if c == nil || mk == nil {
		return benchreport.Skip(target, "needs Courier and a MultiKueue under this load")
	}
	cv, mv := c.Figures[key].Median, mk.Figures[key].Median
	ok := cv <= ratio*mv
	if higher {
		ok = cv >= ratio*mv
	}
	if ratio == 1 && !higher {
		ok = cv < mv
	}
	return benchreport.Check(ok, target, fmt.Sprintf("Courier "+format+", %s "+format+" (medians of %d and %d)",
		cv, mk.Label, mv, c.Repeats, mk.Repeats))
}

// floorNote says where a lower-is-better target of ratio times the better
// MultiKueue's median stands against the floor's median, when the floor
// ran under l: a target below the floor is one no dispatcher can meet.
// It also gives what each dispatcher adds above the floor, the measure
// that compares the dispatchers alone when the floor is most of the cost.
func floorNote(l LoadSummary, key string, ratio float64, format string) string {
	floor, mk, c := l.system(SystemFloor), betterMultiKueue(l, key, false), l.system(SystemCourier)
	if floor == nil || mk == nil || c == nil {
		return ""
	}
	fv, mv, cv := floor.Figures[key].Median, mk.Figures[key].Median, c.Figures[key].Median
	target := ratio * mv
	where := "above it"
	if target < fv {
		where = "below it: no dispatcher can meet it"
	}
	note := fmt.Sprintf("; with no dispatcher (the floor) "+format+", so the target, "+format+", is %s", fv, target, where)
	note += fmt.Sprintf("; above the floor, medians less its median, Courier adds "+format+" and %s "+format, cv-fv, mk.Label, mv-fv)
	// A ratio only of two costs: below the floor, a median is noise.
	if mv > fv && cv >= fv {
		note += fmt.Sprintf(" (%.2f×)", (cv-fv)/(mv-fv))
	}
	return note
}

// freeNote says where a higher-is-better target of ratio times the better
// MultiKueue's median stands against the free dispatcher's median, when it
// ran under l: what the stack reached with a dispatcher that cost nothing
// of its own.
func freeNote(l LoadSummary, key string, ratio float64, format string) string {
	free, mk := l.system(SystemFree), betterMultiKueue(l, key, true)
	if free == nil || mk == nil {
		return ""
	}
	fv, target := free.Figures[key].Median, ratio*mk.Figures[key].Median
	where := "below it"
	if target > fv {
		where = "above it: a dispatcher that cost nothing did not reach it"
	}
	return fmt.Sprintf("; the harness as dispatcher, at no cost of its own, "+format+", so the target, "+format+", is %s", fv, target, where)
}

// betterMultiKueue is the MultiKueue whose median of a figure is better
// under l, higher or lower, or nil when none ran.
func betterMultiKueue(l LoadSummary, key string, higher bool) *SystemSummary {
	var mk *SystemSummary
	for _, name := range multiKueues {
		s := l.system(name)
		if s == nil {
			continue
		}
		if _, ok := s.Figures[key]; !ok {
			continue
		}
		better := mk == nil || s.Figures[key].Median < mk.Figures[key].Median
		if higher {
			better = mk == nil || s.Figures[key].Median > mk.Figures[key].Median
		}
		if better {
			mk = s
		}
	}
	return mk
}

// courierEveryLoad checks one target on Courier's summary of each load.
func courierEveryLoad(loads []LoadSummary, target string, ok func(*SystemSummary) (bool, string)) benchreport.Verdict {
	pass, ran := true, false
	var details []string
	for _, l := range loads {
		s := l.system(SystemCourier)
		if s == nil {
			continue
		}
		ran = true
		good, detail := ok(s)
		pass = pass && good
		details = append(details, l.Load+" "+detail)
	}
	if !ran {
		return benchreport.Skip(target, "Courier did not run")
	}
	return benchreport.Check(pass, target, strings.Join(details, ", ")+" (medians)")
}

// belowSaturation puts submission → Ready side by side at each steady
// rate, with how busy the machine was: reported, not judged, as both
// dispatchers sit at the same floor of round trips there.
func belowSaturation(loads []LoadSummary) []string {
	var out []string
	for _, l := range loads {
		if l.Rate == 0 || l.Batch {
			continue
		}
		var parts []string
		for _, s := range l.Systems {
			parts = append(parts, fmt.Sprintf("%s %.2f / %.2f s (machine %.0f%% busy)", s.Label,
				s.Figures["submitToReady.p50"].Median, s.Figures["submitToReady.p95"].Median, s.Figures["machine.busy"].Median))
		}
		out = append(out, fmt.Sprintf("%s: submission → check Ready p50 / p95, medians: %s", l.Load, strings.Join(parts, "; ")))
	}
	return out
}
