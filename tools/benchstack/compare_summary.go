package benchstack

import (
	"slices"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// PhaseResult is one system under one load, as written to the comparison
// JSON.
type PhaseResult struct {
	System      string    `json:"system"`
	SystemLabel string    `json:"systemLabel"`
	Load        string    `json:"load"`
	Kind        string    `json:"kind"`
	Batch       bool      `json:"batch,omitempty"`
	Jobs        int       `json:"jobs"`
	Rate        float64   `json:"rate,omitempty"`
	Run         string    `json:"run"`
	Started     time.Time `json:"started"`
	// SubmitSeconds is from the first submission to the last.
	SubmitSeconds float64 `json:"submitSeconds"`
	// Throughput is the workloads whose check turned Ready over the time
	// from the first quota reserved to the last check Ready.
	Throughput        float64 `json:"throughput"`
	ThroughputSeconds float64 `json:"throughputSeconds"`
	// QuotaToReady is from quota reserved to the check Ready on the
	// manager; ReadyToComplete from the check Ready to the manager job
	// Complete (or Failed).
	QuotaToReady    benchreport.Percentiles `json:"quotaToReady"`
	ReadyToComplete benchreport.Percentiles `json:"readyToComplete"`
	// QuotaToWorkerQuota and QuotaToJobOnWorker are the steps within
	// QuotaToReady, from quota reserved on the manager: to a worker's
	// Kueue first seen reserving quota for a copy of the Workload, and to
	// the job's copy first seen on a worker. What follows the second is
	// the dispatcher's own writes up to the check Ready.
	QuotaToWorkerQuota benchreport.Percentiles `json:"quotaToWorkerQuota"`
	QuotaToJobOnWorker benchreport.Percentiles `json:"quotaToJobOnWorker"`
	Finished           map[string]int          `json:"finished"`
	// Unfinished names the jobs whose Workload was not Finished when the
	// phase's time limit ran out: too slow to judge, not a broken
	// invariant; a warning of the phase says so.
	Unfinished []string       `json:"unfinished,omitempty"`
	Invariants Invariants     `json:"invariants"`
	Requests   WorkerRequests `json:"requests"`
	Dispatcher DispatcherCost `json:"dispatcher"`
	// CPU is every process of the stack, largest first.
	CPU []benchreport.ProcessCPU `json:"cpu"`
	// MachineBusy is the share of the machine's CPU busy during the
	// phase, this stack or not: another load on the machine shows here.
	MachineBusy float64 `json:"machineBusy"`
	// WindowSeconds is the phase's measured window: from before the
	// first submission until its jobs drained.
	WindowSeconds float64 `json:"windowSeconds"`
	// Samples are per job, for the plots: seconds from quota reserved to
	// check Ready, and of each check Ready after the first quota reserved.
	Samples Samples `json:"samples"`
	// Profiles are the dispatcher's CPU profiles over the phase, in slices
	// that `go tool pprof` merges; Courier's only.
	Profiles []string `json:"profiles,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Samples are the raw per-job times behind the percentiles.
type Samples struct {
	QuotaToReady []float64 `json:"quotaToReady"`
	ReadyAt      []float64 `json:"readyAt"`
}

// Invariants name the jobs that broke one.
type Invariants struct {
	// FinishedNeverReady: the Workload finished with the check never seen
	// Ready.
	FinishedNeverReady []string `json:"finishedNeverReady"`
	// FinalStatusMissing: the Workload finished, but the manager job never
	// got Complete or Failed.
	FinalStatusMissing []string `json:"finalStatusMissing"`
	// OnTwoWorkers: copies of the job were seen on two workers.
	OnTwoWorkers []string `json:"onTwoWorkers"`
}

// Broken counts the jobs that broke an invariant.
func (i Invariants) Broken() int {
	return len(i.FinishedNeverReady) + len(i.FinalStatusMissing) + len(i.OnTwoWorkers)
}

// DispatcherCost is the dispatcher process's CPU and memory during the
// phase. For MultiKueue it is the whole manager Kueue process, which
// admits the workloads too.
type DispatcherCost struct {
	Process          string  `json:"process"`
	Note             string  `json:"note,omitempty"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	CPUMsPerWorkload float64 `json:"cpuMsPerWorkload"`
	PeakRSSMiB       float64 `json:"peakRSSMiB"`
	// PassesPerWorkload are Courier's dispatch passes (reconciles) per
	// workload; less noisy than the CPU from run to run. Courier only.
	PassesPerWorkload float64 `json:"passesPerWorkload,omitempty"`
}

// summarizeJobs fills the timings and invariants of res from the jobs'
// records, names in the same order.
func summarizeJobs(res *PhaseResult, names []string, jobs []phaseJob) {
	var firstSubmit, lastSubmit, firstQuota, lastReady time.Time
	var toReady, toComplete, toWorkerQuota, toJobOnWorker []time.Duration
	res.Finished = map[string]int{}
	inv := Invariants{FinishedNeverReady: []string{}, FinalStatusMissing: []string{}, OnTwoWorkers: []string{}}
	for _, j := range jobs {
		if !j.quotaReserved.IsZero() && (firstQuota.IsZero() || j.quotaReserved.Before(firstQuota)) {
			firstQuota = j.quotaReserved
		}
		if firstSubmit.IsZero() || j.submitted.Before(firstSubmit) {
			firstSubmit = j.submitted
		}
		lastSubmit = later(lastSubmit, j.submitted)
	}
	for i, j := range jobs {
		name := names[i]
		if !j.finished.IsZero() {
			res.Finished[j.reason]++
		}
		if !j.quotaReserved.IsZero() {
			toWorkerQuota = appendStep(toWorkerQuota, j.quotaReserved, j.workerQuota)
			toJobOnWorker = appendStep(toJobOnWorker, j.quotaReserved, j.onWorker)
		}
		if !j.checkReady.IsZero() {
			lastReady = later(lastReady, j.checkReady)
			res.Samples.ReadyAt = append(res.Samples.ReadyAt, j.checkReady.Sub(firstQuota).Seconds())
			if !j.quotaReserved.IsZero() {
				d := j.checkReady.Sub(j.quotaReserved)
				toReady = append(toReady, d)
				res.Samples.QuotaToReady = append(res.Samples.QuotaToReady, d.Seconds())
			}
			if !j.final.IsZero() {
				toComplete = append(toComplete, max(j.final.Sub(j.checkReady), 0))
			}
		} else if !j.finished.IsZero() {
			inv.FinishedNeverReady = append(inv.FinishedNeverReady, name)
		}
		switch {
		case j.finished.IsZero() && j.final.IsZero():
			res.Unfinished = append(res.Unfinished, name)
		case j.final.IsZero():
			inv.FinalStatusMissing = append(inv.FinalStatusMissing, name)
		}
		if len(j.copies) > 1 {
			inv.OnTwoWorkers = append(inv.OnTwoWorkers, name)
		}
	}
	slices.Sort(res.Samples.QuotaToReady)
	slices.Sort(res.Samples.ReadyAt)
	res.Invariants = inv
	res.SubmitSeconds = lastSubmit.Sub(firstSubmit).Seconds()
	if !firstQuota.IsZero() && lastReady.After(firstQuota) {
		res.ThroughputSeconds = lastReady.Sub(firstQuota).Seconds()
		res.Throughput = float64(len(toReady)) / res.ThroughputSeconds
	}
	res.QuotaToReady = benchreport.PercentilesOf(toReady)
	res.ReadyToComplete = benchreport.PercentilesOf(toComplete)
	res.QuotaToWorkerQuota = benchreport.PercentilesOf(toWorkerQuota)
	res.QuotaToJobOnWorker = benchreport.PercentilesOf(toJobOnWorker)
}

// appendStep appends the time from from to to, if to was seen. Informers
// of different clusters deliver in their own time, so a step seen before
// the one it follows counts as taking none.
func appendStep(steps []time.Duration, from, to time.Time) []time.Duration {
	if to.IsZero() {
		return steps
	}
	return append(steps, max(to.Sub(from), 0))
}
