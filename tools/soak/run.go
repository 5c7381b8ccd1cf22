package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/courierdev/courier/tools/localcluster"
)

// progressEvery is how often the soak prints how far it got.
const progressEvery = 30 * time.Second

// selfFaultWindow is Courier's self-fault window in the soak. The soak's
// faults on different workers come a minute apart or less, far closer than
// independent failures do, and Courier's default window (2 minutes) would
// take most of them together for a fault of its own and move nothing:
// only those that begin together, as cut-off-all's do, should be.
const selfFaultWindow = 30 * time.Second

// Run brings up a fresh environment, runs the load and the faults, checks
// the invariants, writes soak.json and timeline.png to OutDir, and brings
// the environment down by PID unless Keep, on failure and cancellation
// too. It returns an error when the soak could not run or an invariant
// failed.
func Run(ctx context.Context, opts Options, out io.Writer) (err error) {
	for _, p := range []*string{&opts.Dir, &opts.Bin, &opts.OutDir} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	if err := opts.validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return fmt.Errorf("creating the output folder: %w", err)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(out, "courier-bench soak: %d jobs at %g/s, %d faults, seed %d, on a manager and %d workers; %d CPUs; environment in %s\n",
		opts.Jobs, opts.Rate, opts.Faults, opts.Seed, workers, runtime.NumCPU(), opts.Dir)
	began := time.Now()
	// Courier logs at least its lifecycle (V(2): placements, jobs held
	// back, copies removed), so that a broken invariant's path can be read
	// afterwards.
	env, err := localcluster.Up(ctx, localcluster.Options{Dir: opts.Dir, Bin: opts.Bin, Workers: workers,
		GPUNodes: gpuNodes, GPUsPerNode: gpusPerNode, CourierLogLevel: max(opts.CourierLogLevel, 2),
		CourierValues: []string{"configuration.selfFault.window=" + selfFaultWindow.String()}, Fence: true}, logf)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, finish(opts, logf)) }()
	// Courier reaches each worker through a proxy of the soak's, which
	// lives as long as the soak does.
	lnk, err := startLinks(env)
	if err != nil {
		return err
	}
	defer lnk.close()
	if err := localcluster.StartCourierAndConfigure(ctx, env, logf); err != nil {
		return err
	}
	second, err := env.StartCourierReplica(replicaCount)
	if err != nil {
		return err
	}
	logf("Started a second Courier replica, %s; leader election picks one", second)
	rep, err := soak(ctx, env, lnk, opts, []string{localcluster.CourierProcess, second}, logf)
	if opts.Keep {
		// The proxies end with the soak: Courier is routed to the workers
		// directly for the environment that stays.
		rctx, cancel := restoreContext()
		err = errors.Join(err, routeDirect(rctx, env, lnk))
		cancel()
	}
	if err != nil {
		return err
	}
	rep.Options, rep.Began, rep.Ended = opts, began, time.Now()
	return rep.write(opts.OutDir, out)
}

// soak runs the load and the faults on a running environment and checks
// the invariants.
func soak(ctx context.Context, env *localcluster.Env, lnk links, opts Options, courierNames []string, logf func(string, ...any)) (*Report, error) {
	lostTimeout, policy, err := lostWorker(env)
	if err != nil {
		return nil, err
	}
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return nil, err
	}
	workerClients := map[string]client.Client{}
	for _, w := range env.Workers {
		if workerClients[w], err = env.Client(w); err != nil {
			return nil, err
		}
	}
	run := rand.String(5)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := observe(ctx, env, run, rec); err != nil {
		return nil, err
	}
	jobs := planJobs(opts.Seed, "soak-"+run, opts.Jobs, opts.Rate, opts.MaxRunFor, longRunFor(lostTimeout))
	plan := planFaults(opts.Seed, opts.Faults, opts.window(), env.Workers, opts.Kinds)
	in := &injector{env: env, mgr: mgr, workers: workerClients, rec: rec, run: run, lostTimeout: lostTimeout, policy: policy,
		courier: newReplicas(env.Dir, courierNames), creds: newCredentials(mgr, workerClients), links: lnk, logf: logf}

	start := time.Now().Add(time.Second)
	logf("Submitting %d jobs at %g/s (label %s=%s) while %d faults are injected; lost-worker policy %s, workerLostTimeout %s",
		len(jobs), opts.Rate, runLabel, run, len(plan), policy, lostTimeout)
	submitted := make(chan error, 1)
	go func() { submitted <- submitLoad(ctx, mgr, jobs, run, start, rec) }()
	faultsDone := make(chan []*Fault, 1)
	go func() { faultsDone <- in.runFaults(ctx, plan, start) }()

	var faults []*Fault
	var loadErr error
	for pending := 2; pending > 0; {
		select {
		case loadErr = <-submitted:
			pending--
			if loadErr != nil {
				// The faults stop, restoring what they broke.
				cancel()
			} else {
				logf("All %d jobs submitted", len(jobs))
			}
		case faults = <-faultsDone:
			pending--
			logf("All %d faults injected and restored", len(faults))
		case <-time.After(progressEvery):
			logf("%s", progressOf(rec.snapshot()))
		}
	}
	if loadErr != nil {
		return nil, loadErr
	}
	// A component that exited a while after its API server came back
	// would stall a worker for good, as no kubelet restarts it here.
	for _, w := range env.Workers {
		if err := localcluster.StartCluster(ctx, env.Dir, env.Bin, w); err != nil {
			return nil, err
		}
	}
	quiet := time.Now()
	for _, f := range faults {
		if f.Restored.After(quiet) {
			quiet = f.Restored
		}
	}
	logf("Faults over; waiting up to %s for every job to finish", opts.Timeout)
	if err := awaitFinished(ctx, rec, opts.Timeout, logf); err != nil {
		logf("%v", err)
	}
	logf("Waiting up to %s for Courier to remove every copy", settleFor(lostTimeout))
	orphans, err := awaitNoOrphans(ctx, workerClients, settleFor(lostTimeout))
	if err != nil {
		return nil, err
	}
	return check(ctx, mgr, in, rec, faults, orphans, quiet, lostTimeout, opts)
}

// lostWorker reads Courier's workerLostTimeout and lostWorkerPolicy from
// the first replica's Configuration.
func lostWorker(env *localcluster.Env) (time.Duration, string, error) {
	data, err := os.ReadFile(filepath.Join(env.Dir, env.Manager, "courier", "config.yaml"))
	if err != nil {
		return 0, "", fmt.Errorf("reading Courier's config: %w", err)
	}
	var cfg struct {
		WorkerLostTimeout string `json:"workerLostTimeout"`
		LostWorkerPolicy  string `json:"lostWorkerPolicy"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return 0, "", fmt.Errorf("decoding Courier's config: %w", err)
	}
	d, err := time.ParseDuration(cfg.WorkerLostTimeout)
	if err != nil {
		return 0, "", fmt.Errorf("the soak needs a short workerLostTimeout in %s (it sets 30s): %w", localcluster.ChartValues, err)
	}
	return d, cfg.LostWorkerPolicy, nil
}

// routeDirect points Courier's kubeconfig Secrets at the workers' API
// servers rather than at the soak's proxies.
func routeDirect(ctx context.Context, env *localcluster.Env, lnk links) error {
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return err
	}
	creds := newCredentials(mgr, nil)
	var errs []error
	for w, p := range lnk {
		errs = append(errs, creds.updateSecret(ctx, w, func(kubeconfig []byte) ([]byte, error) {
			return localcluster.WithServer(kubeconfig, p.Target())
		}))
	}
	return errors.Join(errs...)
}

// settleFor bounds the wait for Courier to remove the copies of finished
// jobs: a worker drained or lost at the end of the faults, and two rounds
// of garbage collection.
func settleFor(lostTimeout time.Duration) time.Duration {
	return lostTimeout + 90*time.Second
}

// awaitFinished waits until every submitted job's Workload is Finished.
func awaitFinished(ctx context.Context, rec *recorder, timeout time.Duration, logf func(string, ...any)) error {
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		jobs := rec.snapshot()
		if len(checkLost(jobs)) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs not finished %s after the faults ended", len(checkLost(jobs)), timeout)
		}
		if time.Since(last) > progressEvery {
			last = time.Now()
			logf("%s", progressOf(jobs))
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return fmt.Errorf("waiting for the jobs to finish: %w", ctx.Err())
		}
	}
}

// progressOf counts the jobs submitted, running and finished.
func progressOf(jobs []Job) string {
	var submitted, live, finished int
	for _, j := range jobs {
		if !j.Submitted.IsZero() {
			submitted++
		}
		if !j.Finished.IsZero() {
			finished++
		}
		for _, c := range j.Copies {
			if c.Deleted.IsZero() {
				live++
			}
		}
	}
	return fmt.Sprintf("%d submitted, %d finished, %d copies on workers", submitted, finished, live)
}

// finish keeps every log of the environment in OutDir/logs and brings the
// environment down by PID, unless it is to be kept.
func finish(opts Options, logf func(string, ...any)) error {
	logs := filepath.Join(opts.OutDir, "logs")
	copyErr := localcluster.CollectLogs(opts.Dir, logs)
	if copyErr == nil {
		logf("Logs: %s", logs)
	}
	if opts.Keep {
		cl := filepath.Join(opts.Bin, "courier-local")
		logf("The environment stays up: %s status --dir %s; stop it with %s down --dir %s --bin %s", cl, opts.Dir, cl, opts.Dir, opts.Bin)
		return copyErr
	}
	logf("Bringing the environment down")
	// The soak's context may be cancelled already; this must still run.
	if err := localcluster.Down(context.Background(), opts.Dir, opts.Bin); err != nil {
		return errors.Join(copyErr, fmt.Errorf("bringing the environment down: %w", err))
	}
	return copyErr
}
