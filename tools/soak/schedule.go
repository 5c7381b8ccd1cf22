package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults of issue 14, an eviction on either side, and the manager's
// API server killed, each injected at least once.
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
	quickJobsPerBurst      = 5
)

// Kinds lists every kind of fault, in the order the schedule first uses
// them.
var Kinds = []Kind{PauseShort, PauseLong, APIServerKill, CourierKill, SecretRotate, SecretBroken, RemoteDelete,
	ForeignObject, KueueRestart, CheckRecreate, WorkerDelete, QuickJobs, ForbiddenPatch, RemoteEvict,
	ManagerDeactivate, ManagerKill}

// workerScoped kinds act on one worker; two of them never overlap on the
// same worker. The others act on Courier or the manager and are
// serialized among themselves.
var workerScoped = map[Kind]bool{PauseShort: true, PauseLong: true, APIServerKill: true, SecretRotate: true,
	SecretBroken: true, RemoteDelete: true, RemoteEvict: true, ForeignObject: true, KueueRestart: true, WorkerDelete: true}

// Planned is one fault of the schedule.
type Planned struct {
	Kind Kind `json:"kind"`
	// Target is the worker of a worker-scoped fault, else "courier" or
	// "manager": faults on one target never overlap.
	Target string `json:"target"`
	// At is the offset from the first submission.
	At time.Duration `json:"at"`
}

// target of a fault that is not worker-scoped.
func sharedTarget(k Kind) string {
	if k == CourierKill {
		return "courier"
	}
	return "manager"
}

// planFaults returns n faults (at least one of each kind, n is raised to
// that) spread over window from the first submission, at seeded times and
// on seeded workers.
func planFaults(seed uint64, n int, window time.Duration, workers []string) []Planned {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	kinds := slices.Clone(Kinds)
	for len(kinds) < n {
		kinds = append(kinds, Kinds[rng.IntN(len(Kinds))])
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	slot := window / time.Duration(len(kinds)+1)
	out := make([]Planned, len(kinds))
	for i, k := range kinds {
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

// planJobs returns n jobs named prefix-NNNN submitted at rate per second:
// about a third batch Jobs, run times from instant (a quarter) through one
// second (a tenth) to maxRunFor.
func planJobs(seed uint64, prefix string, n int, rate float64, maxRunFor time.Duration) []JobSpec {
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
		out[i] = JobSpec{Name: fmt.Sprintf("%s-%04d", prefix, i), Kind: kind, RunFor: runFor,
			At: time.Duration(float64(i) / rate * float64(time.Second))}
	}
	return out
}
