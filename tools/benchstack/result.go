package benchstack

import (
	"maps"
	"slices"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// Result is one run, as written to stack.json.
type Result struct {
	Command       string    `json:"command"`
	CourierBinary string    `json:"courierBinary"`
	Started       time.Time `json:"started"`
	// Run is the value of the run label on the jobs.
	Run         string   `json:"run"`
	Jobs        int      `json:"jobs"`
	Rate        float64  `json:"rate"`
	Workers     []string `json:"workers"`
	GPUNodes    int      `json:"gpuNodesPerWorker"`
	GPUsPerNode int      `json:"gpusPerNode"`
	MetricsURL  string   `json:"metricsURL"`

	// SubmitSeconds is from the first submission to the last.
	SubmitSeconds float64 `json:"submitSeconds"`
	// Finished counts the jobs by the reason their Workload finished.
	Finished map[string]int `json:"finished"`
	// WallSeconds is from the first submission to the last Workload seen
	// Finished, and Throughput the jobs over it.
	WallSeconds float64 `json:"wallSeconds"`
	Throughput  float64 `json:"throughput"`
	// Latency is from a job's submission to its Workload seen Finished.
	Latency benchreport.Percentiles `json:"latency"`
	// SettleSeconds is from the last Workload Finished to the last copy
	// seen deleted.
	SettleSeconds float64 `json:"settleSeconds"`

	Placement Placement             `json:"placement"`
	Requests  Requests              `json:"requests"`
	Targets   []benchreport.Verdict `json:"targets"`
	Warnings  []string              `json:"warnings,omitempty"`
}

// Placement is where the jobs ran, as the workers' informers saw it.
type Placement struct {
	// PerWorker counts the jobs whose TrainJob copy was started there.
	PerWorker map[string]int `json:"perWorker"`
	// MaxShare is the largest worker's count over all jobs.
	MaxShare       float64 `json:"maxShare"`
	MaxShareWorker string  `json:"maxShareWorker"`
	// OnTwoWorkers names the jobs with TrainJob copies on more than one
	// worker: run, or ready to run, twice.
	OnTwoWorkers []string `json:"onTwoWorkers,omitempty"`
	// NeverStarted names the jobs no copy of which was seen started.
	NeverStarted []string `json:"neverStarted,omitempty"`
	// Recreated counts the jobs with more than one TrainJob copy on one
	// worker, one after the other.
	Recreated int `json:"recreated"`
	// WorkloadCopiesOnTwo counts the jobs whose Workload was copied to
	// both workers: a nomination widened after roundTimeout.
	WorkloadCopiesOnTwo int `json:"workloadCopiesOnTwo"`
}

// Requests are Courier's requests to the workers during the run, from its
// metrics: the difference of a scrape before the first submission and one
// after the last copy was deleted.
type Requests struct {
	Total uint64 `json:"total"`
	// Reads (gets) and Writes are made for workloads; Background are the
	// informers' lists and watches and the health probes, made by the
	// minute whatever the workloads.
	Reads      uint64 `json:"reads"`
	Writes     uint64 `json:"writes"`
	Background uint64 `json:"background"`
	// PerWorkload divides the reads and writes by the jobs.
	PerWorkload PerWorkload       `json:"perWorkload"`
	ByVerb      map[string]uint64 `json:"byVerb"`
	// ByWorker is by worker, then by verb.
	ByWorker map[string]map[string]uint64 `json:"byWorker"`
	// Errors is by worker, then by "verb code", as pkg/metrics counts
	// them: no answer, a 429 or a 5xx.
	Errors map[string]map[string]uint64 `json:"errors,omitempty"`
}

// PerWorkload is a count divided by the jobs; Total is reads and writes.
type PerWorkload struct {
	Total  float64 `json:"total"`
	Reads  float64 `json:"reads"`
	Writes float64 `json:"writes"`
}

// summarize fills res from what the informers saw and the requests
// counted.
func summarize(res *Result, t *tracker, names []string, counts requestCounts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first, lastSubmit, lastFinish time.Time
	var latencies []time.Duration
	res.Finished = map[string]int{}
	p := Placement{PerWorker: map[string]int{}}
	for _, w := range res.Workers {
		p.PerWorker[w] = 0
	}
	for _, n := range names {
		j := t.jobs[n]
		if j == nil {
			continue
		}
		if first.IsZero() || j.submitted.Before(first) {
			first = j.submitted
		}
		lastSubmit = later(lastSubmit, j.submitted)
		lastFinish = later(lastFinish, j.finished)
		res.Finished[j.reason]++
		latencies = append(latencies, j.finished.Sub(j.submitted))
		var ranOn []string
		for _, w := range slices.Sorted(maps.Keys(j.copies)) {
			started := false
			for _, c := range j.copies[w] {
				started = started || c.started
			}
			if started {
				ranOn = append(ranOn, w)
				p.PerWorker[w]++
			}
			if len(j.copies[w]) > 1 {
				p.Recreated++
			}
		}
		if len(j.copies) > 1 {
			p.OnTwoWorkers = append(p.OnTwoWorkers, n)
		}
		if len(ranOn) == 0 {
			p.NeverStarted = append(p.NeverStarted, n)
		}
		if j.workload != nil && len(t.workloadCopies[j.workload.Name]) > 1 {
			p.WorkloadCopiesOnTwo++
		}
	}
	for _, w := range res.Workers {
		if share := float64(p.PerWorker[w]) / float64(len(names)); share > p.MaxShare || p.MaxShareWorker == "" {
			p.MaxShare, p.MaxShareWorker = share, w
		}
	}
	res.Placement = p
	res.SubmitSeconds = lastSubmit.Sub(first).Seconds()
	res.WallSeconds = lastFinish.Sub(first).Seconds()
	res.Throughput = float64(len(names)) / res.WallSeconds
	res.Latency = benchreport.PercentilesOf(latencies)
	res.Requests = requestsOf(counts, len(names))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// requestsOf totals the counts and divides them by the jobs.
func requestsOf(c requestCounts, jobs int) Requests {
	r := Requests{ByVerb: map[string]uint64{}, ByWorker: c.Requests, Errors: c.Errors}
	for _, verbs := range c.Requests {
		for v, n := range verbs {
			r.ByVerb[v] += n
			r.Total += n
			switch {
			case isWrite(v):
				r.Writes += n
			case isBackground(v):
				r.Background += n
			default:
				r.Reads += n
			}
		}
	}
	per := func(n uint64) float64 { return float64(n) / float64(jobs) }
	r.PerWorkload = PerWorkload{Total: per(r.Reads + r.Writes), Reads: per(r.Reads), Writes: per(r.Writes)}
	return r
}
