package benchstack

import (
	"slices"
	"strings"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// PhaseResult is one system under one load in one repeat, as written to
// the comparison JSON.
type PhaseResult struct {
	System      string    `json:"system"`
	SystemLabel string    `json:"systemLabel"`
	Load        string    `json:"load"`
	Kind        string    `json:"kind"`
	Batch       bool      `json:"batch,omitempty"`
	Jobs        int       `json:"jobs"`
	Rate        float64   `json:"rate,omitempty"`
	Run         string    `json:"run"`
	Repeat      int       `json:"repeat"`
	Started     time.Time `json:"started"`
	// SubmitSeconds is from the first submission to the last.
	SubmitSeconds float64 `json:"submitSeconds"`
	// Throughput is the jobs complete on the manager over the time from
	// the first submission to the last complete.
	Throughput        float64 `json:"throughput"`
	ThroughputSeconds float64 `json:"throughputSeconds"`
	// ReadyThroughput is the workloads whose check turned Ready over the
	// time from the first quota reserved to the last check Ready.
	ReadyThroughput float64 `json:"readyThroughput"`
	// What a user sees, from the job's submission (the create sent to the
	// manager): to its Workload's check Ready on the manager; to a copy of
	// the job running on a worker (seen there unsuspended); to the manager
	// job Complete (or Failed).
	SubmitToReady    benchreport.Percentiles `json:"submitToReady"`
	SubmitToRunning  benchreport.Percentiles `json:"submitToRunning"`
	SubmitToComplete benchreport.Percentiles `json:"submitToComplete"`
	// QuotaToReady is from quota reserved to the check Ready on the
	// manager: the dispatcher's own share, after the manager's queueing.
	QuotaToReady benchreport.Percentiles `json:"quotaToReady"`
	// QuotaToWorkerQuota and QuotaToJobOnWorker are steps within
	// QuotaToReady, from quota reserved on the manager: to a worker's
	// Kueue first seen reserving quota for a copy of the Workload, and to
	// the job's copy first seen on a worker.
	QuotaToWorkerQuota benchreport.Percentiles `json:"quotaToWorkerQuota"`
	QuotaToJobOnWorker benchreport.Percentiles `json:"quotaToJobOnWorker"`
	Finished           map[string]int          `json:"finished"`
	// Unfinished names the jobs whose Workload was not Finished when the
	// phase's time limit ran out: too slow to judge, not a broken
	// invariant; a warning of the phase says so.
	Unfinished []string   `json:"unfinished,omitempty"`
	Invariants Invariants `json:"invariants"`
	// Sides are the manager side's and the worker side's CPU and memory
	// (sideProcesses).
	Sides map[string]SideCost `json:"sides"`
	// Dispatcher is the dispatcher's process alone: Courier, or the
	// manager's Kueue for MultiKueue.
	Dispatcher DispatcherCost `json:"dispatcher"`
	// IdleCourier is the Courier process through MultiKueue's phases.
	IdleCourier *DispatcherCost `json:"idleCourier,omitempty"`
	// ManagerRequests are every identity's requests to the manager's API
	// server; WorkerRequests the dispatcher identity's to the workers'
	// (and the watches of every identity there, which share the watch
	// events).
	ManagerRequests SideRequests `json:"managerRequests"`
	WorkerRequests  SideRequests `json:"workerRequests"`
	// CPU is every process of the stack, largest first.
	CPU []benchreport.ProcessCPU `json:"cpu"`
	// MachineBusy is the share of the machine's CPU busy during the
	// phase; OutsideStack the part of it no process of the stack used:
	// another load on the machine.
	MachineBusy  float64     `json:"machineBusy"`
	OutsideStack float64     `json:"outsideStack"`
	LoadAverage  LoadAverage `json:"loadAverage"`
	// Machine is the machine's own speed and steal through the phase,
	// absent from phases recorded before they were measured.
	Machine *MachineCheck `json:"machineCheck,omitempty"`
	// WindowSeconds is the phase's measured window: from before the
	// first submission until its jobs drained.
	WindowSeconds float64 `json:"windowSeconds"`
	// PassesPerWorkload are Courier's dispatch passes per workload.
	PassesPerWorkload float64 `json:"passesPerWorkload,omitempty"`
	// CourierWatch is what the Courier process's informers read, as it
	// counts them; absent from phases run before Courier counted them.
	CourierWatch *CourierWatch `json:"courierWatch,omitempty"`
	Samples      Samples       `json:"samples"`
	// Profiles are the CPU profiles of Courier, the manager's Kueue and
	// the manager's API server over the phase, in slices that `go tool
	// pprof` merges.
	Profiles []string `json:"profiles,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// AuditRotations counts, by cluster, the rotations of its API
	// server's audit log that the reads of this phase's requests followed
	// from one file into the next. The teardown deletes the logs, so this
	// is the only trace of a rotation the counts went through.
	AuditRotations map[string]int `json:"auditRotations,omitempty"`
}

// CourierWatch is the watch events, and their bytes, that the Courier
// process's informers read over a phase, per job, from its own metrics:
// counts, where the requests' watch rows share the API servers' totals
// among the watches (watchevents.go).
type CourierWatch struct {
	// ByKind is by side and kind watched: "manager Workload.kueue.x-k8s.io",
	// "workers TrainJob.trainer.kubeflow.org".
	ByKind map[string]watchTotal `json:"byKind"`
}

// From sums the kinds read from one side (watchFromManager or
// watchFromWorkers).
func (w *CourierWatch) From(side string) watchTotal {
	var t watchTotal
	for key, k := range w.ByKind {
		if s, _, _ := strings.Cut(key, " "); s == side {
			t.Events += k.Events
			t.Bytes += k.Bytes
		}
	}
	return t
}

// Samples are the raw per-job times behind the percentiles, in seconds,
// sorted: for the plots.
type Samples struct {
	SubmitToReady    []float64 `json:"submitToReady"`
	SubmitToComplete []float64 `json:"submitToComplete"`
	QuotaToReady     []float64 `json:"quotaToReady"`
	// CompleteAt is each job's completion after the first submission.
	CompleteAt []float64 `json:"completeAt"`
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

// DispatcherCost is one process's CPU and memory during the phase.
type DispatcherCost struct {
	Process          string  `json:"process"`
	Note             string  `json:"note,omitempty"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	CPUMsPerWorkload float64 `json:"cpuMsPerWorkload"`
	PeakRSSMiB       float64 `json:"peakRSSMiB"`
}

// summarizeJobs fills the timings and invariants of res from the jobs'
// records, names in the same order.
func summarizeJobs(res *PhaseResult, names []string, jobs []phaseJob) {
	var firstSubmit, lastSubmit, firstQuota, lastReady, lastFinal time.Time
	var toReady, toRunning, toComplete, quotaToReady, toWorkerQuota, toJobOnWorker []time.Duration
	res.Finished = map[string]int{}
	inv := Invariants{FinishedNeverReady: []string{}, FinalStatusMissing: []string{}, OnTwoWorkers: []string{}}
	for _, j := range jobs {
		firstQuota = earlier(firstQuota, j.quotaReserved)
		firstSubmit = earlier(firstSubmit, j.submitted)
		lastSubmit = later(lastSubmit, j.submitted)
	}
	readies := 0
	for i, j := range jobs {
		name := names[i]
		if !j.finished.IsZero() {
			res.Finished[j.reason]++
		}
		if !j.quotaReserved.IsZero() {
			toWorkerQuota = appendStep(toWorkerQuota, j.quotaReserved, j.workerQuota)
			toJobOnWorker = appendStep(toJobOnWorker, j.quotaReserved, j.onWorker)
		}
		if !j.submitted.IsZero() {
			toReady = appendStep(toReady, j.submitted, j.checkReady)
			toRunning = appendStep(toRunning, j.submitted, j.running)
			toComplete = appendStep(toComplete, j.submitted, j.final)
		}
		if !j.final.IsZero() {
			lastFinal = later(lastFinal, j.final)
			if !firstSubmit.IsZero() {
				res.Samples.CompleteAt = append(res.Samples.CompleteAt, j.final.Sub(firstSubmit).Seconds())
			}
		}
		if !j.checkReady.IsZero() {
			readies++
			lastReady = later(lastReady, j.checkReady)
			if !j.quotaReserved.IsZero() {
				quotaToReady = appendStep(quotaToReady, j.quotaReserved, j.checkReady)
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
	res.Invariants = inv
	res.SubmitSeconds = lastSubmit.Sub(firstSubmit).Seconds()
	if !firstSubmit.IsZero() && lastFinal.After(firstSubmit) {
		res.ThroughputSeconds = lastFinal.Sub(firstSubmit).Seconds()
		res.Throughput = float64(len(res.Samples.CompleteAt)) / res.ThroughputSeconds
	}
	if !firstQuota.IsZero() && lastReady.After(firstQuota) {
		res.ReadyThroughput = float64(readies) / lastReady.Sub(firstQuota).Seconds()
	}
	res.SubmitToReady = benchreport.PercentilesOf(toReady)
	res.SubmitToRunning = benchreport.PercentilesOf(toRunning)
	res.SubmitToComplete = benchreport.PercentilesOf(toComplete)
	res.QuotaToReady = benchreport.PercentilesOf(quotaToReady)
	res.QuotaToWorkerQuota = benchreport.PercentilesOf(toWorkerQuota)
	res.QuotaToJobOnWorker = benchreport.PercentilesOf(toJobOnWorker)
	res.Samples.SubmitToReady = seconds(toReady)
	res.Samples.SubmitToComplete = seconds(toComplete)
	res.Samples.QuotaToReady = seconds(quotaToReady)
	slices.Sort(res.Samples.CompleteAt)
}

// seconds are the durations in seconds, sorted.
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	slices.Sort(out)
	return out
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

// earlier is the earlier of two times, a zero one not counting.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
