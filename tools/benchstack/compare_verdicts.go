package benchstack

import (
	"fmt"
	"strings"

	"github.com/courierdev/courier/tools/benchreport"
)

// The comparison's targets (issue 12).
const (
	// latencyRatio: at a steady rate below saturation, Courier's p95 of
	// quota reserved to check Ready is at most this share of the faster
	// MultiKueue's.
	latencyRatio = 1.0 / 5
	// throughputRatio: at the largest burst, Courier's throughput is at
	// least this multiple of the faster MultiKueue's.
	throughputRatio = 1.5
	// maxCompareRequests bounds Courier's gets and writes to the workers
	// per workload; maxCPUMs its CPU per workload.
	maxCompareRequests = 4.0
	maxCPUMs           = 10.0
)

// compareVerdicts judges the phases against the targets. A target whose
// phases did not run is SKIP.
func compareVerdicts(phases []PhaseResult) []benchreport.Verdict {
	byLoad := map[string]map[string]*PhaseResult{}
	var loads []string
	for i := range phases {
		p := &phases[i]
		if byLoad[p.Load] == nil {
			byLoad[p.Load] = map[string]*PhaseResult{}
			loads = append(loads, p.Load)
		}
		byLoad[p.Load][p.System] = p
	}
	var out []benchreport.Verdict
	// The steady rates, and the largest burst.
	var largest string
	for _, l := range loads {
		c := byLoad[l][SystemCourier]
		mk := fasterMultiKueue(byLoad[l], func(p *PhaseResult) float64 { return -p.QuotaToReady.P95 })
		var any *PhaseResult
		for _, p := range byLoad[l] {
			any = p
			break
		}
		if any.Batch {
			continue
		}
		if any.Rate == 0 {
			if largest == "" || any.Jobs > byLoad[largest][firstSystem(byLoad[largest])].Jobs {
				largest = l
			}
			continue
		}
		target := fmt.Sprintf("%s: Courier's p95 quota reserved → check Ready ≤ 1/5 of the faster MultiKueue's", l)
		if c == nil || mk == nil {
			out = append(out, benchreport.Skip(target, "needs Courier and a MultiKueue under this load"))
			continue
		}
		// Below saturation is the target's condition: the machine's busy
		// share says how far below it each system's run was.
		out = append(out, benchreport.Check(c.QuotaToReady.P95 <= latencyRatio*mk.QuotaToReady.P95, target,
			fmt.Sprintf("Courier %.2f s, %s %.2f s; the machine %.0f%% and %.0f%% busy",
				c.QuotaToReady.P95, mk.SystemLabel, mk.QuotaToReady.P95, 100*c.MachineBusy, 100*mk.MachineBusy)))
	}
	if len(out) == 0 {
		out = append(out, benchreport.Skip("at a steady rate: Courier's p95 ≤ 1/5 of the faster MultiKueue's", "no steady-rate load ran"))
	}
	target := "at the largest burst: Courier's throughput ≥ 1.5× the faster MultiKueue's"
	if largest == "" {
		out = append(out, benchreport.Skip(target, "no burst ran"))
	} else {
		c := byLoad[largest][SystemCourier]
		mk := fasterMultiKueue(byLoad[largest], func(p *PhaseResult) float64 { return p.Throughput })
		target = fmt.Sprintf("%s: Courier's throughput ≥ 1.5× the faster MultiKueue's", largest)
		if c == nil || mk == nil {
			out = append(out, benchreport.Skip(target, "needs Courier and a MultiKueue under this load"))
		} else {
			out = append(out, benchreport.Check(c.Throughput >= throughputRatio*mk.Throughput, target,
				fmt.Sprintf("Courier %.2f/s, %s %.2f/s", c.Throughput, mk.SystemLabel, mk.Throughput)))
		}
	}
	out = append(out, courierEveryPhase(phases, fmt.Sprintf("Courier ≤ %.0f requests (gets and writes) to the workers per workload", maxCompareRequests),
		func(p *PhaseResult) (bool, string) {
			return p.Requests.PerWorkload.ForWorkloads <= maxCompareRequests, fmt.Sprintf("%.2f", p.Requests.PerWorkload.ForWorkloads)
		}))
	out = append(out, courierEveryPhase(phases, fmt.Sprintf("Courier ≤ %.0f ms CPU per workload", maxCPUMs),
		func(p *PhaseResult) (bool, string) {
			return p.Dispatcher.CPUMsPerWorkload <= maxCPUMs, fmt.Sprintf("%.1f ms", p.Dispatcher.CPUMsPerWorkload)
		}))
	for _, name := range SystemOrder {
		var broken, unfinished []string
		ran := false
		for _, p := range phases {
			if p.System != name {
				continue
			}
			ran = true
			if i := p.Invariants; i.Broken() > 0 {
				broken = append(broken, fmt.Sprintf("%s: %d finished never Ready, %d without final status, %d on two workers",
					p.Load, len(i.FinishedNeverReady), len(i.FinalStatusMissing), len(i.OnTwoWorkers)))
			}
			if len(p.Unfinished) > 0 {
				unfinished = append(unfinished, fmt.Sprintf("%s: %d not Finished within the time limit", p.Load, len(p.Unfinished)))
			}
		}
		if !ran {
			continue
		}
		detail := "none broken"
		if len(broken) > 0 {
			detail = strings.Join(broken, "; ")
		}
		if len(unfinished) > 0 {
			detail += " (of the jobs that finished; " + strings.Join(unfinished, "; ") + ")"
		}
		out = append(out, benchreport.Check(len(broken) == 0, Systems[name].Label+": no invariant broken", detail))
	}
	return out
}

// fasterMultiKueue is the MultiKueue phase with the larger score, or nil.
func fasterMultiKueue(bySystem map[string]*PhaseResult, score func(*PhaseResult) float64) *PhaseResult {
	var best *PhaseResult
	for _, name := range []string{SystemMultiKueue, SystemMultiKueueQPS} {
		if p := bySystem[name]; p != nil && (best == nil || score(p) > score(best)) {
			best = p
		}
	}
	return best
}

func firstSystem(bySystem map[string]*PhaseResult) string {
	for _, name := range SystemOrder {
		if bySystem[name] != nil {
			return name
		}
	}
	return ""
}

// courierEveryPhase checks one target on each of Courier's phases.
func courierEveryPhase(phases []PhaseResult, target string, ok func(*PhaseResult) (bool, string)) benchreport.Verdict {
	pass, ran := true, false
	var details []string
	for i := range phases {
		p := &phases[i]
		if p.System != SystemCourier {
			continue
		}
		ran = true
		good, detail := ok(p)
		pass = pass && good
		details = append(details, p.Load+" "+detail)
	}
	if !ran {
		return benchreport.Skip(target, "Courier did not run")
	}
	return benchreport.Check(pass, target, strings.Join(details, ", "))
}
