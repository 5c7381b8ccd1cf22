package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults: the workers' API servers, Courier, its credentials, the
// copies and the manager's objects broken in turn, and Courier's links to
// the workers cut, hung and slowed, each injected at least once when
// asked for.
const (
	PauseShort        Kind = "apiserver-pause-short"
	PauseLong         Kind = "apiserver-pause-long"
	APIServerKill     Kind = "apiserver-kill"
	CourierKill       Kind = "courier-kill"
	SecretRotate      Kind = "secret-rotate"
	SecretBroken      Kind = "secret-broken"
	RemoteDelete      Kind = "remote-delete"
	RemoteEvict       Kind = "remote-evict"
	ManagerDeactivate Kind = "manager-deactivate"
	ManagerKill       Kind = "manager-apiserver-kill"
	ForeignObject     Kind = "foreign-object"
	KueueRestart      Kind = "kueue-restart"
	CheckRecreate     Kind = "admissioncheck-recreate"
	WorkerDelete      Kind = "workercluster-delete"
	QuickJobs         Kind = "quick-jobs"
	ForbiddenPatch    Kind = "forbidden-runtimepatch"
	// Partition cuts Courier off from a worker, through the worker's
	// proxy, for workerLostTimeout + 20s, while the worker goes on running
	// its jobs: the worker it picks when its time comes runs a job that
	// will outlive the fault. Courier should count the worker lost and
	// move its jobs only as its lost-worker policy allows: under Fenced,
	// once the worker's fence must have stopped them, so that no job's
	// pods run on two workers at once; when the link is back, the stopped
	// copies are deleted. Under Timeout the jobs move after
	// workerLostTimeout while their copies still run: overlaps, the
	// policy's documented risk, which the soak reports.
	Partition Kind = "partition"
	// Hang makes the link to a worker it picks as a partition does answer
	// nothing for workerLostTimeout + 20s: Courier's requests still reach
	// the worker's API server, which may act on them, but no answer comes
	// back and no new connection completes its TLS handshake. Courier
	// should treat the worker as unreachable, with the same outcome as a
	// partition: never two workers at once, and a create whose answer it
	// never read is not taken for one that failed.
	Hang Kind = "hang"
	// SlowLink delays every chunk on a worker's link by 0.5s to 2s, either
	// way, for slowFor. Courier should go on dispatching to the worker and
	// mirroring its status, more slowly: no job moved, none restarted.
	SlowLink Kind = "slow-link"
	// CutOffAll cuts Courier off from every worker at once, for twice
	// workerLostTimeout, as a fault on Courier's own side (its DNS, egress,
	// network policy) would, once some worker runs a job that will outlive
	// workerLostTimeout, while every worker runs its jobs. Courier should
	// suspect itself: move nothing, and reconnect without restarting
	// anything: of the jobs running when the links were cut, 0 restarted
	// and 0 moved. No other fault runs meanwhile, nor for settleAfter once
	// the links are back, and the links are cut only once Courier has
	// counted every worker connected for settleAfter, so that what happens
	// then is this fault's and not an earlier one's.
	CutOffAll Kind = "cut-off-all"
	// RestartAfterDown cuts Courier off from a worker that runs a job that
	// will outlive the fault, waits until Courier counts it disconnected,
	// stops every Courier replica, keeps them down until the worker has
	// been out of reach for workerLostTimeout + 20s, starts them again,
	// and brings the link back restartBack later, before workerLostTimeout
	// has passed since the restart. A lost clock must not carry over a
	// restart: Courier should count only what it observed since it
	// started, and evict none of that worker's jobs: 0 restarted, 0 moved.
	// No other fault runs meanwhile, nor for settleAfter once the link is
	// back, and it begins, as cut-off-all does, once every worker has been
	// connected for settleAfter.
	RestartAfterDown Kind = "restart-after-down"
)

// quickJobsPerBurst are the jobs one quick-jobs fault submits.
const quickJobsPerBurst = 5

// Kinds lists every kind of fault, in the order the schedule first uses
// them.
var Kinds = []Kind{PauseShort, PauseLong, APIServerKill, CourierKill, SecretRotate, SecretBroken, RemoteDelete,
	ForeignObject, KueueRestart, CheckRecreate, WorkerDelete, QuickJobs, ForbiddenPatch, RemoteEvict,
	ManagerDeactivate, ManagerKill, Partition, Hang, SlowLink, CutOffAll, RestartAfterDown}

// ShortKinds are the kinds of the short soak that CI runs: all but the
// partitions that take longest, and one partition.
var ShortKinds = slices.DeleteFunc(slices.Clone(Kinds), func(k Kind) bool {
	return k == Hang || k == SlowLink || k == CutOffAll || k == RestartAfterDown
})

// workerScoped kinds act on one worker, seeded; two of them never overlap
// on the same worker. The others act on Courier or the manager and are
// serialized among themselves, or on the worker they pick.
var workerScoped = map[Kind]bool{PauseShort: true, PauseLong: true, APIServerKill: true, SecretRotate: true,
	SecretBroken: true, RemoteDelete: true, RemoteEvict: true, ForeignObject: true, KueueRestart: true, WorkerDelete: true,
	SlowLink: true}

// pickWorker kinds act on the worker they find running a job that will
// outlive them, when their time comes: a partition of a worker that runs
// nothing, or only jobs about to end, would show nothing.
var pickWorker = map[Kind]bool{Partition: true, Hang: true, RestartAfterDown: true}

// onlyOnce kinds are planned once however many faults are: each holds
// Courier, the manager's objects and every worker for minutes.
var onlyOnce = map[Kind]bool{CutOffAll: true, RestartAfterDown: true}

// Planned is one fault of the schedule.
type Planned struct {
	Kind Kind `json:"kind"`
	// Target is the worker of a worker-scoped fault, else "courier",
	// "manager" or "all-workers": faults on one target never overlap
	// (lockTargets).
	Target string `json:"target"`
	// At is the offset from the first submission.
	At time.Duration `json:"at"`
}

// The targets of the faults that are not worker-scoped.
const (
	courierTarget = "courier"
	managerTarget = "manager"
	allWorkers    = "all-workers"
	// anyWorker is the planned target of a pickWorker fault.
	anyWorker = "any-worker"
)

// target of a fault that is not worker-scoped.
func sharedTarget(k Kind) string {
	switch {
	case k == CourierKill:
		return courierTarget
	case k == CutOffAll:
		return allWorkers
	case pickWorker[k]:
		return anyWorker
	}
	return managerTarget
}

// lockTargets are the targets a fault holds while it runs, sorted, so that
// faults holding several take them in one order: cut-off-all and
// restart-after-down hold everything, as they stop Courier's view of every
// worker and what follows is theirs to judge; a partition or a hang the
// worker it picks (none here), the others their target.
func lockTargets(p Planned, workers []string) []string {
	var out []string
	switch {
	case p.Kind == CutOffAll || p.Kind == RestartAfterDown:
		out = append(slices.Clone(workers), courierTarget, managerTarget)
	case p.Target == anyWorker:
		return nil
	default:
		out = []string{p.Target}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// planFaults returns n faults (at least one of each of kinds, n is raised
// to that) spread over window from the first submission, at seeded times
// and on seeded workers.
func planFaults(seed uint64, n int, window time.Duration, workers []string, kinds []Kind) []Planned {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	plan := slices.Clone(kinds)
	again := slices.DeleteFunc(slices.Clone(kinds), func(k Kind) bool { return onlyOnce[k] })
	for len(plan) < n && len(again) > 0 {
		plan = append(plan, again[rng.IntN(len(again))])
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	slot := window / time.Duration(len(plan)+1)
	out := make([]Planned, len(plan))
	for i, k := range plan {
		// One slot per fault, jittered within its first half, so that the
		// order is the shuffled one.
		at := slot*time.Duration(i+1) + time.Duration(rng.Int64N(int64(slot/2)+1))
		target := sharedTarget(k)
		if workerScoped[k] {
			target = workers[rng.IntN(len(workers))]
		}
		out[i] = Planned{Kind: k, Target: target, At: at.Round(time.Second)}
	}
	return out
}

// JobKind is the kind of a submitted job.
type JobKind string

// The kinds the soak submits: Courier's built-in TrainJob, and batch Jobs,
// an external framework in the e2e values.
const (
	TrainJob JobKind = "TrainJob"
	BatchJob JobKind = "Job"
)

// JobSpec is one job of the load.
type JobSpec struct {
	Name string  `json:"name"`
	Kind JobKind `json:"kind"`
	// RunFor is how long its pods run; 0 finishes them at once.
	RunFor time.Duration `json:"runFor"`
	// At is the submission's offset from the first; faults submit their
	// jobs at their own time.
	At time.Duration `json:"at"`
}

// longShare is the part of the jobs submitted, among the first 60%, that
// run long, one in longEvery: those the partitions need, jobs that outlive
// workerLostTimeout; later ones would only lengthen the soak.
const (
	longEvery = 8
	longShare = 0.6
)

// planJobs returns n jobs named prefix-NNNN submitted at rate per second:
// about a third batch Jobs, run times from instant (a quarter) through one
// second (a tenth) to maxRunFor, and, when long is set, about one in
// longEvery of the first longShare of them for long.
func planJobs(seed uint64, prefix string, n int, rate float64, maxRunFor, long time.Duration) []JobSpec {
	rng := rand.New(rand.NewPCG(seed, seed^0x10ad))
	out := make([]JobSpec, n)
	for i := range out {
		kind := TrainJob
		if rng.IntN(3) == 0 {
			kind = BatchJob
		}
		var runFor time.Duration
		switch p := rng.IntN(20); {
		case p < 5:
		case p < 7:
			runFor = time.Second
		default:
			runFor = (time.Duration(rng.Int64N(int64(maxRunFor)))).Round(time.Second)
		}
		if long > 0 && float64(i) < longShare*float64(n) && rng.IntN(longEvery) == 0 {
			runFor = long
		}
		out[i] = JobSpec{Name: fmt.Sprintf("%s-%04d", prefix, i), Kind: kind, RunFor: runFor,
			At: time.Duration(float64(i) / rate * float64(time.Second))}
	}
	return out
}
