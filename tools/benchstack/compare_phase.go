package benchstack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	batchtesting "github.com/courierdev/courier/pkg/testing/batch"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/tools/localcluster"
)

// Load is one load of the comparison: Jobs jobs at Rate per second, or
// all at once when Rate is 0; TrainJobs, or batch Jobs through Courier's
// external framework when Batch.
type Load struct {
	Name  string  `json:"name"`
	Jobs  int     `json:"jobs"`
	Rate  float64 `json:"rate,omitempty"`
	Batch bool    `json:"batch,omitempty"`
}

// kind names the load's jobs.
func (l Load) kind() string {
	if l.Batch {
		return "one-CPU batch Jobs"
	}
	return "one-GPU TrainJobs"
}

// object builds one job of the load, whose pods run for runFor on the
// simulated nodes.
func (l Load) object(name, run string, runFor time.Duration) client.Object {
	if !l.Batch {
		b := benchJob(name, run)
		if runFor > 0 {
			b.RunFor("bench.courier.dev", runFor)
		}
		return b.Obj()
	}
	b := batchtesting.MakeJob(name, localcluster.Namespace).Queue(localcluster.LocalQueue).
		ManagedBy(courier.ControllerName).CPU("1").Label(runLabel, run)
	if runFor > 0 {
		b.PodAnnotation(trainertesting.RunForAnnotation, runFor.String())
	}
	return b.Obj()
}

// burstSubmitters is how many submissions a burst keeps in flight.
const burstSubmitters = 8

// phaseOptions are what every phase of a comparison shares.
type phaseOptions struct {
	runFor, timeout time.Duration
	// rest is how long each side's CPU is measured at rest before the
	// phase; 0 for not at all.
	rest  time.Duration
	prof  *phaseProfiler
	audit *phaseAudit
}

// runPhase runs one load through one system on the running environment:
// it switches to the system, submits the jobs, waits until they finished
// and their copies are gone, measures, then deletes the jobs and waits
// for the manager to drain, so that the next phase starts clean.
func runPhase(ctx context.Context, env *localcluster.Env, sys System, load Load, repeat int, opts phaseOptions, logf func(string, ...any)) (*PhaseResult, error) {
	if err := switchTo(ctx, env, sys, logf); err != nil {
		return nil, err
	}
	if sys.Name == SystemFloor || sys.Name == SystemFree {
		fctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := startFloor(fctx, env, sys.Name == SystemFree); err != nil {
			return nil, err
		}
	}
	left, err := awaitQuietWorkers(ctx, env, logf)
	if err != nil {
		return nil, err
	}
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return nil, err
	}
	if err := warmUp(ctx, env, sys, mgr); err != nil {
		return nil, err
	}
	run := rand.String(5)
	prefix := fmt.Sprintf("cmp-%s-", run)
	names := make([]string, load.Jobs)
	for i := range names {
		names[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	t := newPhaseTracker(prefix, sys.Check)
	tally := newEventTally()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := watchPhase(pctx, env, labels.SelectorFromSet(labels.Set{runLabel: run}), t, tally); err != nil {
		return nil, err
	}
	procs, err := stackPIDs(env)
	if err != nil {
		return nil, err
	}
	res := &PhaseResult{System: sys.Name, SystemLabel: sys.Label, Load: load.Name, Kind: load.kind(), Batch: load.Batch, Jobs: load.Jobs,
		Rate: load.Rate, Run: run, Repeat: repeat}
	if left != "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("started with what earlier phases left on the workers, %s after the last: %s", quietTimeout, left))
	}
	// At rest first: the requests and watch events counted from here on
	// are the phase's.
	manager, worker := sideProcesses(sys, env)
	sides := map[string][]string{sideManager: manager, sideWorker: worker}
	var rest map[string]float64
	if opts.rest > 0 {
		if rest, err = measureRest(ctx, procs, sides, opts.rest); err != nil {
			return nil, err
		}
	}
	restProbe, err := probeAtRest()
	if err != nil {
		return nil, err
	}
	res.Machine = &MachineCheck{RestProbeCPUMs: restProbe}
	courierCounted, err := countCourier(ctx, env)
	if err != nil {
		return nil, err
	}
	if err := opts.audit.start(ctx, env); err != nil {
		return nil, err
	}
	meter, err := startMeter(pctx, procs, sides)
	if err != nil {
		return nil, err
	}
	res.Started = time.Now()
	prober := startProber(pctx, probeEvery)
	profiled := opts.prof.start(pctx, sys, load, repeat)
	logf("Submitting %d %s %s through %s, load %s, repeat %d (label %s=%s)", load.Jobs, load.kind(), describeRate(load.Rate), sys.Label, load.Name, repeat+1, runLabel, run)
	submitted := make(chan error, 1)
	go func() { submitted <- submitPhase(pctx, mgr, names, run, load, opts.runFor, t) }()
	if err := awaitPhase(ctx, names, t, submitted, opts.timeout, res, logf); err != nil {
		return nil, err
	}
	// The last requests' audit events and CPU ticks land a moment later.
	select {
	case <-time.After(inFlight):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	end := time.Now()
	res.WindowSeconds = end.Sub(res.Started).Seconds()
	meter.stop(res, sys, load.Jobs, rest)
	if err := prober.stop(res.Machine); err != nil {
		return nil, err
	}
	if err := courierCounted.stop(ctx, res); err != nil {
		return nil, err
	}
	if err := opts.audit.stop(ctx, env, res.Started, end, tally, res); err != nil {
		return nil, err
	}
	if err := profiled.wait(res); err != nil {
		return nil, err
	}
	summarizeJobs(res, names, t.snapshot(names))
	if toWorkers, _ := dispatcherWorkerRequests(res); len(toWorkers.ByCall) == 0 && sys.Name != SystemFloor {
		res.Warnings = append(res.Warnings, "the workers' audit logs hold no request of "+sys.Program+": is auditing on?")
	}
	cancel()
	return res, drain(ctx, mgr, run, prefix)
}

func describeRate(rate float64) string {
	if rate == 0 {
		return "at once"
	}
	return fmt.Sprintf("at %g/s", rate)
}

// submitPhase creates the jobs: at rate per second on a fixed schedule,
// or, at rate 0, all at once from a few submitters.
func submitPhase(ctx context.Context, c client.Client, names []string, run string, load Load, runFor time.Duration, t *phaseTracker) error {
	build := func(name string) client.Object { return load.object(name, run, runFor) }
	if load.Rate > 0 {
		return submit(ctx, c, names, load.Rate, build, t.submitted)
	}
	next := make(chan string)
	errs := make(chan error, burstSubmitters)
	var wg sync.WaitGroup
	for range burstSubmitters {
		wg.Go(func() {
			for name := range next {
				at := time.Now()
				if err := create(ctx, c, build(name)); err != nil {
					errs <- err
					return
				}
				t.submitted(name, at)
			}
		})
	}
	for _, name := range names {
		select {
		case next <- name:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// awaitPhase waits until every Workload finished, then until every manager
// job has its final status and every copy on the workers is deleted, up
// to settleTimeout. What is not there by then stays in the invariants and
// the warnings: a system that loses jobs is reported, not aborted.
func awaitPhase(ctx context.Context, names []string, t *phaseTracker, submitted <-chan error, timeout time.Duration, res *PhaseResult, logf func(string, ...any)) error {
	start := time.Now()
	deadline := start.Add(timeout)
	var settleBy time.Time
	lastProgress := start
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-submitted:
			if err != nil {
				return err
			}
			logf("All %d submitted in %.1f s", len(names), time.Since(start).Seconds())
		case <-ctx.Done():
			return fmt.Errorf("waiting for the jobs: %w", ctx.Err())
		case <-tick.C:
		}
		finished, final, live := t.counts(names)
		now := time.Now()
		if finished == len(names) && settleBy.IsZero() {
			settleBy = now.Add(settleTimeout)
		}
		switch {
		case finished == len(names) && final == len(names) && live == 0:
			return nil
		case !settleBy.IsZero() && now.After(settleBy):
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s after the last Workload finished: %d manager jobs without a final status, %d copies left on the workers",
				settleTimeout, len(names)-final, live))
			return nil
		case now.After(deadline):
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d of %d Workloads not Finished %s after the first submission", len(names)-finished, len(names), timeout))
			return nil
		}
		if now.Sub(lastProgress) >= progressEvery {
			lastProgress = now
			logf("%3.0f s: %d Finished, %d with their final status, %d copies on the workers", now.Sub(start).Seconds(), finished, final, live)
		}
	}
}

// drain deletes the phase's jobs on the manager and waits until they and
// their Workloads are gone.
func drain(ctx context.Context, mgr client.Client, run, prefix string) error {
	for _, obj := range []client.Object{&trainer.TrainJob{}, &batchv1.Job{}} {
		err := mgr.DeleteAllOf(ctx, obj, client.InNamespace(localcluster.Namespace),
			client.MatchingLabels{runLabel: run}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil {
			return fmt.Errorf("deleting the phase's %T: %w", obj, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var jobs trainer.TrainJobList
		var batchJobs batchv1.JobList
		for _, list := range []client.ObjectList{&jobs, &batchJobs} {
			if err := mgr.List(ctx, list, client.InNamespace(localcluster.Namespace), client.MatchingLabels{runLabel: run}, client.Limit(1)); err != nil {
				return false, err
			}
		}
		if len(jobs.Items)+len(batchJobs.Items) > 0 {
			return false, nil
		}
		var wls kueue.WorkloadList
		if err := mgr.List(ctx, &wls, client.InNamespace(localcluster.Namespace)); err != nil {
			return false, err
		}
		for _, wl := range wls.Items {
			if ref := metav1.GetControllerOf(&wl); ref != nil && strings.HasPrefix(ref.Name, prefix) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the phase's jobs and Workloads to be deleted: %w", err)
	}
	return nil
}

// courierCount counts, over a phase, Courier's dispatch passes and the
// watch events its informers read, from its metrics: Courier's own in its
// phases, its idle ones in MultiKueue's.
type courierCount struct {
	url    string
	before courierCounts
}

func countCourier(ctx context.Context, env *localcluster.Env) (*courierCount, error) {
	url, err := env.CourierMetricsURL()
	if err != nil {
		return nil, err
	}
	before, err := scrapeCourier(ctx, url)
	if err != nil {
		return nil, err
	}
	return &courierCount{url: url, before: before}, nil
}

func (c *courierCount) stop(ctx context.Context, res *PhaseResult) error {
	if res.Jobs == 0 {
		return nil
	}
	after, err := scrapeCourier(ctx, c.url)
	if err != nil {
		return err
	}
	jobs := float64(res.Jobs)
	res.PassesPerWorkload = (after.Passes - c.before.Passes) / jobs
	w := &CourierWatch{ByKind: map[string]watchTotal{}}
	for key, t := range after.Watch.minus(c.before.Watch) {
		w.ByKind[key] = watchTotal{Events: t.Events / jobs, Bytes: t.Bytes / jobs}
	}
	res.CourierWatch = w
	return nil
}
