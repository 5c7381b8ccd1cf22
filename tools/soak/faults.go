package soak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/tools/faultproxy"
	"github.com/courierdev/courier/tools/localcluster"
)

// How long the faults last, besides those meant to have jobs moved (the
// long pause, partition, hang), which last movesAfter plus pauseLongExtra.
const (
	pauseShortFor  = 10 * time.Second
	pauseLongExtra = 20 * time.Second
	downFor        = 5 * time.Second
	brokenFor      = 15 * time.Second
	checkGoneFor   = 10 * time.Second
	// settleComponents is the wait, after an API server is back, before the
	// components that exited without it are started again.
	settleComponents = 3 * time.Second
	// superviseEvery is how often the workers' controllers are looked at.
	superviseEvery = 5 * time.Second
	// findFor bounds the wait for a fault's subject: a copy to delete, a
	// worker that holds jobs.
	findFor = 90 * time.Second
	// restoreFor bounds a restoration that runs after the soak was
	// cancelled.
	restoreFor = 4 * time.Minute
)

// Fault is one fault as it was injected.
type Fault struct {
	Planned
	Started  time.Time `json:"started,omitzero"`
	Restored time.Time `json:"restored,omitzero"`
	// Note says what the fault hit: a job, a leader, a process.
	Note string `json:"note,omitempty"`
	// Hit are the jobs the fault acted on directly: a copy deleted or
	// evicted, a Workload deactivated.
	Hit []string `json:"hit,omitempty"`
	// Outage is when the fault kept its target's API server from serving,
	// for those that pause or kill it.
	Outage *Outage `json:"outage,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Foreign is an object created on a worker under a job's name before the
// job was submitted; Courier must leave it alone.
type Foreign struct {
	Worker string  `json:"worker"`
	Kind   JobKind `json:"kind"`
	Name   string  `json:"name"`
	UID    string  `json:"uid"`
}

// injector injects the faults into a running environment.
type injector struct {
	env     *localcluster.Env
	mgr     client.Client
	workers map[string]client.Client
	rec     *recorder
	run     string
	// lostTimeout and policy are Courier's workerLostTimeout and
	// lostWorkerPolicy.
	lostTimeout time.Duration
	policy      string
	courier     *replicas
	creds       *credentials
	// links are the proxies between Courier and each worker.
	links links
	logf  func(string, ...any)

	// courierHeld is held while a fault stops Courier's replicas on
	// purpose: the courier target's lock is held for minutes by faults
	// that leave Courier running, and a replica that exits then must start.
	courierHeld sync.Mutex

	mu sync.Mutex
	// seq numbers the objects faults create.
	seq     int
	foreign []Foreign
}

func (in *injector) next() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seq++
	return in.seq
}

// runFaults injects the planned faults at their time from start, at most
// one at a time per target, and returns them with their times, once every
// one is restored. A fault that cannot be injected is recorded with its
// error; the others go on.
func (in *injector) runFaults(ctx context.Context, plan []Planned, start time.Time) []*Fault {
	locks := map[string]*sync.Mutex{}
	// peerLocks keep the supervisor from starting a peer that a fault
	// stopped on purpose (kueue-restart) before the fault starts it again.
	// They are apart from locks: the faults that wait for a running copy
	// hold a worker's lock for up to 90 s each, back to back, and a peer
	// that exited meanwhile must not wait for them.
	peerLocks := map[string]*sync.Mutex{}
	for _, c := range append([]string{in.env.Manager}, in.env.Workers...) {
		peerLocks[c] = &sync.Mutex{}
	}
	for _, t := range append([]string{courierTarget, managerTarget}, in.env.Workers...) {
		locks[t] = &sync.Mutex{}
	}
	for _, p := range plan {
		for _, t := range lockTargets(p, in.env.Workers) {
			if locks[t] == nil {
				locks[t] = &sync.Mutex{}
			}
		}
	}
	superviseCtx, stopSupervising := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		in.superviseControllers(superviseCtx, locks, peerLocks)
	}()
	defer func() { stopSupervising(); <-supervised }()
	out := make([]*Fault, len(plan))
	var wg sync.WaitGroup
	for i, p := range plan {
		f := &Fault{Planned: p}
		out[i] = f
		wg.Go(func() {
			select {
			case <-time.After(time.Until(start.Add(p.At))):
			case <-ctx.Done():
				f.Error = "not injected: " + ctx.Err().Error()
				return
			}
			for _, t := range lockTargets(p, in.env.Workers) {
				locks[t].Lock()
				defer locks[t].Unlock()
			}
			var picked string
			if p.Target == anyWorker && p.Kind != RestartAfterDown {
				w, what, err := in.pick(ctx, f, locks)
				if err != nil {
					f.Error = err.Error()
					in.logf("fault %s: %v", p.Kind, err)
					return
				}
				defer locks[w].Unlock()
				f.Target, picked = w, what
			}
			if l := peerLocks[p.Target]; l != nil && p.Kind == KueueRestart {
				l.Lock()
				defer l.Unlock()
			}
			if p.Kind == CourierKill {
				in.courierHeld.Lock()
				defer in.courierHeld.Unlock()
			}
			if ctx.Err() != nil {
				f.Error = "not injected: " + ctx.Err().Error()
				return
			}
			f.Started = time.Now()
			in.logf("fault %s on %s", p.Kind, f.Target)
			note, err := in.inject(ctx, f, locks)
			err = errors.Join(err, in.checkShort(f))
			f.Restored, f.Note = time.Now(), note
			if picked != "" {
				f.Note = picked + "; " + note
			}
			if err != nil {
				f.Error = err.Error()
				in.logf("fault %s on %s: %v", p.Kind, f.Target, err)
			}
		})
	}
	wg.Wait()
	return out
}

// inject runs one fault to its end, restoring what it broke even when ctx
// ends, and says what it hit. locks are the targets' locks, for a fault
// that acts on a worker other than its target.
func (in *injector) inject(ctx context.Context, f *Fault, locks map[string]*sync.Mutex) (string, error) {
	p := f.Planned
	dir, w := in.env.Dir, p.Target
	switch p.Kind {
	case PauseShort:
		return in.pauseAPIServer(ctx, f, pauseShortFor)
	case PauseLong:
		return in.pauseAPIServer(ctx, f, in.movesAfter()+pauseLongExtra)
	case APIServerKill, ManagerKill: // The manager's target is its cluster's name.
		return in.killAPIServer(ctx, f)
	case CourierKill:
		return in.courier.killLeader(ctx)
	case KueueRestart:
		name := w + "/kueue"
		if err := localcluster.KillProcess(dir, name, false); err != nil {
			return "", err
		}
		sleep(ctx, downFor)
		proc, err := localcluster.RestartProcess(dir, name)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Kueue restarted as PID %d", proc.PID), nil
	case SecretRotate:
		// The worker's token controller fills the new token; the fault
		// holds the worker, so the supervisor does not look after it.
		return in.creds.rotate(ctx, w, func() error { return in.reviveControllers(w) })
	case SecretBroken:
		return in.creds.breakFor(ctx, w, brokenFor)
	case RemoteDelete:
		return in.deleteRemote(ctx, f)
	case RemoteEvict:
		return in.evictRemote(ctx, f)
	case ManagerDeactivate:
		return in.deactivateOnManager(ctx, f, locks)
	case ForeignObject:
		return in.foreignObject(ctx, w)
	case CheckRecreate:
		return in.recreateCheck(ctx)
	case WorkerDelete:
		return in.deleteWorkerCluster(ctx, w)
	case QuickJobs:
		return in.quickJobs(ctx)
	case ForbiddenPatch:
		return in.forbiddenPatch(ctx)
	case Partition:
		return in.breakLinks(ctx, []string{f.Target}, faultproxy.Partition, in.movesAfter()+pauseLongExtra)
	case Hang:
		return in.breakLinks(ctx, []string{f.Target}, faultproxy.Hang, in.movesAfter()+pauseLongExtra)
	case SlowLink:
		return in.slowLink(ctx, w)
	case CutOffAll:
		return in.cutOffAll(ctx, f)
	case RestartAfterDown:
		return in.restartAfterDown(ctx, f)
	}
	return "", fmt.Errorf("unknown fault kind %q", p.Kind)
}

// restoreContext bounds a restoration, which must run even when the
// soak's context has ended.
func restoreContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), restoreFor)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// liveCopy waits for a job with an unfinished, started copy on worker, or
// on any worker when worker is "", that take accepts (any, when take is
// nil); take is asked last, so that it may lock what it accepts. A fault
// whose turn comes once the load has ended (faults that wait for others'
// locks run late) finds none: it then submits jobs of its own, one per
// worker, and waits for one of them.
func (in *injector) liveCopy(ctx context.Context, worker string, take func(*Copy) bool) (*Job, *Copy, error) {
	var job *Job
	var cp *Copy
	find := func(context.Context) (bool, error) {
		for _, j := range in.rec.snapshot() {
			for _, c := range j.Copies {
				if (worker == "" || c.Worker == worker) && !c.Started.IsZero() && c.Ended.IsZero() && c.Deleted.IsZero() && j.RunFor >= 5*time.Second && (take == nil || take(c)) {
					job, cp = &j, c
					return true, nil
				}
			}
		}
		return false, nil
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, findFor, true, find)
	if err != nil && ctx.Err() == nil {
		names, serr := in.targetJobs(ctx, targetRunFor)
		if serr != nil {
			return nil, nil, serr
		}
		in.logf("No running copy on %s for %s: submitted %s", orAny(worker), findFor, strings.Join(names, ", "))
		err = wait.PollUntilContextTimeout(ctx, time.Second, findFor, true, find)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("waiting %s for a running copy on %s: %w", findFor, orAny(worker), err)
	}
	return job, cp, nil
}

// onFreeWorker accepts a copy on a worker no fault holds, and holds it:
// the caller unlocks the worker of the copy liveCopy returns.
func onFreeWorker(locks map[string]*sync.Mutex) func(*Copy) bool {
	return func(c *Copy) bool { return locks[c.Worker].TryLock() }
}

func orAny(worker string) string {
	if worker == "" {
		return "any worker"
	}
	return worker
}

// targetRunFor is how long a job a fault submits for itself runs: long
// enough to be found running, and to outlast the fault.
const targetRunFor = 90 * time.Second

// targetJobs submits one TrainJob per worker, each running for runFor, for
// a fault that found no running job, and returns their names. Placement
// spreads them as it does any jobs: a fault that needs one particular
// worker may still find none there.
func (in *injector) targetJobs(ctx context.Context, runFor time.Duration) ([]string, error) {
	n := in.next()
	var names []string
	for i := range len(in.workers) {
		spec := JobSpec{Name: fmt.Sprintf("soak-%s-target-%d-%d", in.run, n, i), Kind: TrainJob, RunFor: runFor}
		if err := submit(ctx, in.mgr, spec, in.run, in.rec); err != nil {
			return names, err
		}
		names = append(names, spec.Name)
	}
	return names, nil
}

// errCopyGone says that the running copy a fault picked went, or was
// replaced, before the fault reached it: its job ended meanwhile, or
// Courier moved it.
var errCopyGone = errors.New("the copy went before the fault reached it")

// gone marks the errors of a copy, or its Workload, no longer there.
func gone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %w", errCopyGone, err)
	}
	return err
}

// onLiveCopy runs fault on a running copy on worker, or on any worker when
// worker is "", and on another while the one it picked went before the
// fault reached it.
func (in *injector) onLiveCopy(ctx context.Context, worker string, fault func(*Job, *Copy) (string, error)) (string, error) {
	tried := map[types.UID]bool{}
	for {
		job, cp, err := in.liveCopy(ctx, worker, func(c *Copy) bool { return !tried[c.UID] })
		if err != nil {
			return "", err
		}
		out, err := fault(job, cp)
		if !errors.Is(err, errCopyGone) {
			return out, err
		}
		tried[cp.UID] = true
	}
}

// deleteRemote deletes a running copy on its worker behind Courier's back.
func (in *injector) deleteRemote(ctx context.Context, f *Fault) (string, error) {
	worker := f.Target
	return in.onLiveCopy(ctx, worker, func(job *Job, cp *Copy) (string, error) {
		f.Hit = append(f.Hit, job.Name)
		obj := jobObject(job.JobSpec, in.run)
		obj.SetUID(cp.UID)
		err := in.workers[worker].Delete(ctx, obj, client.Preconditions{UID: &cp.UID},
			client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil {
			return "", fmt.Errorf("deleting the copy of %s on %s: %w", job.Name, worker, gone(err))
		}
		return fmt.Sprintf("deleted the copy of %s %s (uid %s)", job.Kind, job.Name, cp.UID), nil
	})
}

// evictRemote has the worker's Kueue evict a running copy, as its own
// administrator would: it deactivates the Workload copy the job copy names
// (spec.active false), and Kueue evicts it and suspends the job.
func (in *injector) evictRemote(ctx context.Context, f *Fault) (string, error) {
	worker := f.Target
	return in.onLiveCopy(ctx, worker, func(job *Job, cp *Copy) (string, error) {
		f.Hit = append(f.Hit, job.Name)
		c := in.workers[worker]
		obj := jobObject(job.JobSpec, in.run)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return "", fmt.Errorf("getting the copy of %s on %s: %w", job.Name, worker, gone(err))
		}
		if obj.GetUID() != cp.UID || obj.GetDeletionTimestamp() != nil {
			return "", fmt.Errorf("the copy of %s on %s is %s now, not the running %s, or is being deleted: %w", job.Name, worker, obj.GetUID(), cp.UID, errCopyGone)
		}
		name := obj.GetLabels()[adapter.PrebuiltWorkloadLabel]
		if name == "" {
			return "", fmt.Errorf("the copy of %s on %s has no label %s", job.Name, worker, adapter.PrebuiltWorkloadLabel)
		}
		if err := setActive(ctx, c, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, false); err != nil {
			return "", fmt.Errorf("deactivating the Workload of %s on %s: %w", job.Name, worker, gone(err))
		}
		return fmt.Sprintf("deactivated Workload %s of %s %s (copy uid %s)", name, job.Kind, job.Name, cp.UID), nil
	})
}
