package benchstack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	configapi "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/tools/benchreport"
	"github.com/courierdev/courier/tools/localcluster"
	"github.com/courierdev/courier/tools/profiles"
)

// shippedDefaults set back what the e2e values (e2e/courier-values.yaml)
// change for their specs and costs Courier work a platform team's install
// would not do: PlacementDecisions, a write per job, on for the fleet
// spec; and a sweep of the workers for orphans every 15 s, four times as
// often as by default.
var shippedDefaults = []string{
	"configuration.placementDecisions.enable=false",
	"configuration.gcInterval=" + configapi.DefaultGCInterval.String(),
}

// CompareOptions shape a comparison of Courier with MultiKueue.
type CompareOptions struct {
	// Command is the command line, recorded in the results.
	Command string
	// Dir is the environment's folder; Bin holds the binaries of `make
	// e2e-binaries build` and the patched Kueue.
	Dir, Bin string
	// OutDir receives the JSON and the PNGs.
	OutDir string
	// Workers is the number of identical workers.
	Workers int
	// Bursts are the burst sizes; Rates the steady rates, each of
	// RateJobs jobs.
	Bursts   []int
	Rates    []float64
	RateJobs int
	// BatchJobs is a burst of batch Jobs through Courier's external
	// framework, for Courier only; 0 for none.
	BatchJobs int
	// Systems are the systems' names; each repeat runs them in
	// SystemOrder rotated by the repeat (rotation).
	Systems []string
	// Repeats is how many times every load runs through every system.
	Repeats int
	// RunFor is how long each job's pods run on the simulated nodes; 0
	// completes them at once.
	RunFor time.Duration
	// Timeout bounds each phase, from its first submission.
	Timeout time.Duration
	// Keep leaves the environment up at the end.
	Keep bool
	// Profile saves CPU profiles of Courier, the manager's Kueue and the
	// manager's API server over every phase, of every system, under Dir.
	Profile bool
	// Rest is how long each side's CPU is measured at rest before every
	// phase, after its warm-up; 0 for not at all.
	Rest time.Duration
	// CourierLogLevel is Courier's log verbosity, baseline's too; 0 for
	// the default. At 4 the log has every pass's plan, for
	// tools/hack/pass-census.py.
	CourierLogLevel int
}

// Comparison is one run of the comparison, as written to JSON.
type Comparison struct {
	Command  string            `json:"command"`
	Started  time.Time         `json:"started"`
	Machine  Machine           `json:"machine"`
	Versions map[string]string `json:"versions"`
	Loads    []Load            `json:"loads"`
	Repeats  int               `json:"repeats"`
	// Orders are the systems' order in each repeat.
	Orders  [][]string `json:"orders"`
	Profile bool       `json:"profile"`
	// RestSeconds is how long each side was measured at rest before
	// every phase; 0 for not at all.
	RestSeconds float64       `json:"restSeconds,omitempty"`
	Phases      []PhaseResult `json:"phases"`
	// Summaries are each load's figures over the repeats, and the
	// verdicts are judged on their medians.
	Summaries       []LoadSummary         `json:"summaries"`
	Verdicts        []benchreport.Verdict `json:"verdicts"`
	BelowSaturation []string              `json:"belowSaturation,omitempty"`
	Plots           []string              `json:"plots,omitempty"`
}

// Machine is where the comparison ran.
type Machine struct {
	CPUs     int    `json:"cpus"`
	Model    string `json:"model"`
	MemoryGi int    `json:"memoryGi"`
	Kernel   string `json:"kernel"`
}

func (o CompareOptions) loads() []Load {
	var out []Load
	for _, n := range o.Bursts {
		out = append(out, Load{Name: fmt.Sprintf("burst-%d", n), Jobs: n})
	}
	for _, r := range o.Rates {
		out = append(out, Load{Name: fmt.Sprintf("rate-%g", r), Jobs: o.RateJobs, Rate: r})
	}
	if o.BatchJobs > 0 {
		out = append(out, Load{Name: fmt.Sprintf("batch-jobs-%d", o.BatchJobs), Jobs: o.BatchJobs, Batch: true})
	}
	return out
}

func (o CompareOptions) validate() error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers must be at least 1, not %d", o.Workers))
	}
	if o.Repeats < 1 {
		errs = append(errs, fmt.Errorf("repeats must be at least 1, not %d", o.Repeats))
	}
	if o.Rest < 0 {
		errs = append(errs, fmt.Errorf("rest must be 0 or more, not %s", o.Rest))
	}
	if len(o.loads()) == 0 {
		errs = append(errs, errors.New("no load: give --bursts or --rates"))
	}
	for _, n := range o.Bursts {
		if n < 1 {
			errs = append(errs, fmt.Errorf("a burst must be at least 1 job, not %d", n))
		}
	}
	for _, r := range o.Rates {
		if r <= 0 || o.RateJobs < 1 {
			errs = append(errs, fmt.Errorf("a steady rate needs a positive rate and jobs, not %g/s for %d jobs", r, o.RateJobs))
		}
	}
	bins := []string{"courier", "kwokctl", "kueue", "trainer-controller-manager", "jobset", "helm"}
	for _, s := range o.Systems {
		sys, ok := Systems[s]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown system %q", s))
			continue
		}
		if sys.Kueue == PatchedKueue {
			bins = append(bins, PatchedKueue)
		}
		if sys.Courier == BaselineCourier {
			bins = append(bins, BaselineCourier)
		}
	}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(o.Bin, b)); err != nil {
			hint := "run `make e2e-binaries build`"
			switch b {
			case PatchedKueue:
				hint = "run tools/hack/build-kueue-multikueue-qps.sh"
			case BaselineCourier:
				hint = "run tools/hack/build-courier-baseline.sh with the commit to compare with"
			}
			errs = append(errs, fmt.Errorf("finding %s (%s): %w", b, hint, err))
		}
	}
	return errors.Join(errs...)
}

// Compare brings up a manager and opts.Workers workers with audit logging,
// configures Courier and MultiKueue side by side, runs every load through
// every system, opts.Repeats times, one phase after the other on the same
// clusters, and writes the results. It returns an error only when the
// comparison could not be carried out; targets missed are printed as FAIL.
func Compare(ctx context.Context, opts CompareOptions, out io.Writer) (err error) {
	if err := prepareDirs(&opts.Dir, &opts.Bin, opts.OutDir); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	c := &Comparison{Command: opts.Command, Started: time.Now(), Machine: machine(), Versions: versions(opts.Bin),
		Loads: opts.loads(), Repeats: opts.Repeats, Profile: opts.Profile, RestSeconds: opts.Rest.Seconds()}
	stamp := c.Started.UTC().Format("20060102-150405")
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(out, "courier-bench compare: %s on a manager and %d workers of %dx%d GPUs, real Kueue, Trainer and JobSet, %d repeats\n",
		strings.Join(opts.Systems, ", "), opts.Workers, gpuNodes, gpusPerNode, opts.Repeats)
	fmt.Fprintf(out, "command: %s\nmachine: %d CPUs, %s; environment in %s\n", opts.Command, c.Machine.CPUs, c.Machine.Model, opts.Dir)

	lopts := localcluster.Options{Dir: opts.Dir, Bin: opts.Bin, Workers: opts.Workers, GPUNodes: gpuNodes, GPUsPerNode: gpusPerNode, Audit: true,
		CourierValues: shippedDefaults, CourierLogLevel: opts.CourierLogLevel}
	var prof *phaseProfiler
	var kueuePprof string
	if opts.Profile {
		ports, err := framework.FreePorts(2)
		if err != nil {
			return err
		}
		lopts.CourierPprofAddress = fmt.Sprintf("127.0.0.1:%d", ports[0])
		kueuePprof = fmt.Sprintf("127.0.0.1:%d", ports[1])
		prof = &phaseProfiler{dir: filepath.Join(opts.Dir, "profiles-"+stamp), servers: map[string]profiles.Server{
			localcluster.CourierProcess: profiles.PlainServer(lopts.CourierPprofAddress),
			localcluster.KueueProcess:   profiles.PlainServer(kueuePprof),
		}}
	}
	env, err := localcluster.Up(ctx, lopts, logf)
	if err != nil {
		return fmt.Errorf("bringing the environment up: %w", err)
	}
	defer func() { err = errors.Join(err, finishCompare(opts, logf)) }()
	if err := localcluster.StartCourierAndConfigure(ctx, env, logf); err != nil {
		return fmt.Errorf("starting Courier: %w", err)
	}
	logf("Raising every ClusterQueue's quota to %s of each resource, so that no quota binds", unboundQuota)
	if err := unbindQuotas(ctx, env); err != nil {
		return err
	}
	logf("Configuring MultiKueue beside Courier: MultiKueueClusters as %s, a MultiKueueConfig and AdmissionCheck %s", localcluster.WorkerUser, localcluster.MultiKueueCheckName)
	if err := env.ConfigureMultiKueue(ctx); err != nil {
		return fmt.Errorf("configuring MultiKueue: %w", err)
	}
	if contains(opts.Systems, SystemFloor) || contains(opts.Systems, SystemFree) {
		logf("Configuring the floor and the free dispatcher: AdmissionCheck %s, answered by the harness", floorCheck)
		if err := configureFloor(ctx, env); err != nil {
			return err
		}
	}
	if prof != nil {
		logf("Serving the manager Kueue's pprof on %s, for its profiles", kueuePprof)
		if err := servePprofFromKueue(ctx, env, kueuePprof); err != nil {
			return err
		}
		if err := prof.profileAPIServer(env); err != nil {
			return err
		}
	}
	audit := newPhaseAudit(env)
	defer audit.close()
	path := filepath.Join(opts.OutDir, "compare-"+stamp+".json")
	var systems []string
	for _, name := range SystemOrder {
		if contains(opts.Systems, name) {
			systems = append(systems, name)
		}
	}
	for r := range opts.Repeats {
		order := rotation(systems, r)
		c.Orders = append(c.Orders, order)
		for _, load := range c.Loads {
			for _, name := range order {
				// MultiKueue has no adapter for Courier's external frameworks.
				if load.Batch && !Systems[name].courier() {
					continue
				}
				res, err := runPhase(ctx, env, Systems[name], load, r, phaseOptions{runFor: opts.RunFor, timeout: opts.Timeout, rest: opts.Rest, prof: prof, audit: audit}, logf)
				if err != nil {
					return fmt.Errorf("running %s through %s in repeat %d: %w", load.Name, name, r+1, err)
				}
				logMeasured(logf, res)
				if len(res.Profiles) > 0 {
					logf("Saved %d CPU profiles of Courier, the manager's Kueue and its API server: go tool pprof -top %s %s", len(res.Profiles),
						filepath.Join(opts.Bin, cmp.Or(Systems[name].Courier, "courier")), filepath.Join(prof.dir, profilePrefix(load, r, Systems[name], localcluster.CourierProcess)+"-*.pprof"))
				}
				c.Phases = append(c.Phases, *res)
				// Each phase is saved as it ends: a later failure keeps it.
				if err := benchreport.WriteJSON(path, c); err != nil {
					return err
				}
			}
		}
	}
	if err := conclude(c, opts.OutDir, stamp, out); err != nil {
		return err
	}
	if err := benchreport.WriteJSON(path, c); err != nil {
		return err
	}
	if err := writeReports(strings.TrimSuffix(path, ".json"), c, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "results: %s\nplots: %s\n", path, strings.Join(c.Plots, ", "))
	return nil
}

// conclude plots each load into dir, summarizes the repeats, judges the
// targets on the medians, and prints the results.
func conclude(c *Comparison, dir, stamp string, out io.Writer) error {
	for _, load := range c.Loads {
		plots, err := plotLoad(dir, stamp, load, c.Phases)
		if err != nil {
			return err
		}
		c.Plots = append(c.Plots, plots...)
	}
	c.Summaries = summarizeRepeats(c.Loads, c.Phases)
	c.Verdicts = compareVerdicts(c.Summaries)
	c.BelowSaturation = belowSaturation(c.Summaries)
	if err := printComparison(out, c); err != nil {
		return fmt.Errorf("printing results: %w", err)
	}
	return nil
}

// writeReports writes the comparison's summary, its table and its
// at-a-glance table beside its JSON, base.json, and says where.
func writeReports(base string, c *Comparison, out io.Writer) error {
	if err := writeSummary(base+".txt", c); err != nil {
		return err
	}
	if err := writeTable(base+".md", c); err != nil {
		return err
	}
	if err := writeGlance(base+glanceSuffix, c); err != nil {
		return err
	}
	fmt.Fprintf(out, "summary: %s.txt\ntable: %s.md\nat a glance: %s%s\n", base, base, base, glanceSuffix)
	return nil
}

// Tabulate writes the summary, the tables and the plots of a comparison's
// JSON again, from the phases it holds: of a run stopped before its end,
// whose JSON is saved after each phase, or after the harness's reports
// changed.
func Tabulate(path string, out io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	c := &Comparison{}
	if err := json.Unmarshal(data, c); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	if c.Repeats == 0 || len(c.Orders) == 0 {
		return fmt.Errorf("%s holds no repeats: a comparison from before they were recorded", path)
	}
	for i := range c.Phases {
		c.Repeats = max(c.Repeats, c.Phases[i].Repeat+1)
	}
	c.Plots = nil
	if err := conclude(c, filepath.Dir(path), c.Started.UTC().Format("20060102-150405"), out); err != nil {
		return err
	}
	return writeReports(strings.TrimSuffix(path, ".json"), c, out)
}

// logMeasured logs a phase's headline figures as it ends.
func logMeasured(logf func(string, ...any), res *PhaseResult) {
	toWorkers, _ := dispatcherWorkerRequests(res)
	courierWrites := res.ManagerRequests.Of("courier", "").Totals().Writes
	logf("Measured %s, %s, repeat %d: %.2f jobs/s complete, submission → Ready p95 %.1f s, → complete p95 %.1f s; manager side %.1f ms CPU per job, worker side %.1f; %.1f requests and watch events to the workers per job; Courier's writes to the manager %.2f per job",
		res.Load, res.SystemLabel, res.Repeat+1, res.Throughput, res.SubmitToReady.P95, res.SubmitToComplete.P95,
		res.Sides[sideManager].CPUMsPerJob, res.Sides[sideWorker].CPUMsPerJob, perJob(allRequests(toWorkers.Totals()), res.Jobs), perJob(courierWrites, res.Jobs))
}

func allRequests(t RequestTotals) float64 {
	return t.Writes + t.Gets + t.Lists + t.WatchesOpened + t.Other + t.WatchEvents
}

func perJob(n float64, jobs int) float64 {
	if jobs == 0 {
		return 0
	}
	return n / float64(jobs)
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// finishCompare brings the environment down by PID, unless it is to be
// kept. The processes' logs stay in the environment's folder.
func finishCompare(opts CompareOptions, logf func(string, ...any)) error {
	logf("The logs of every process: %s (manager/kueue/kueue.log, manager/courier/courier.log)", opts.Dir)
	if opts.Keep {
		cl := filepath.Join(opts.Bin, "courier-local")
		logf("The environment stays up: %s status --dir %s; stop it with %s down --dir %s --bin %s", cl, opts.Dir, cl, opts.Dir, opts.Bin)
		return nil
	}
	logf("Bringing the environment down")
	if err := localcluster.Down(context.Background(), opts.Dir, opts.Bin); err != nil {
		return fmt.Errorf("bringing the environment down (%s down --dir %s --bin %s): %w",
			filepath.Join(opts.Bin, "courier-local"), opts.Dir, opts.Bin, err)
	}
	return nil
}

// machine describes this machine from /proc.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kib, err := parseStatusKiB(data, "MemTotal"); err == nil {
			m.MemoryGi = int(kib / (1 << 20))
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// fileExists reports whether path names a file that can be read.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// courierVersion is what a Courier binary's --version prints, the commit
// `make build` stamps; for an older build without the flag, the commit
// build-courier-baseline.sh wrote beside it; or else its Go build
// information.
func courierVersion(path string) string {
	if out, err := exec.Command(path, "--version").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	if commit, err := os.ReadFile(path + ".commit"); err == nil {
		return "commit " + strings.TrimSpace(string(commit)) + " (tools/hack/build-courier-baseline.sh)"
	}
	return benchreport.BinaryVersion(path)
}

// versions names the binaries the stack runs: the peers' links in bin
// point at versioned names.
func versions(bin string) map[string]string {
	out := map[string]string{}
	for _, b := range []string{"kueue", "trainer-controller-manager", "jobset", "kube-apiserver", "etcd", "kwok", PatchedKueue} {
		if target, err := os.Readlink(filepath.Join(bin, b)); err == nil {
			out[b] = target
		} else if _, err := os.Stat(filepath.Join(bin, b)); err == nil {
			out[b] = b
		}
	}
	out["courier"] = courierVersion(filepath.Join(bin, "courier"))
	if baseline := filepath.Join(bin, BaselineCourier); fileExists(baseline) {
		out[BaselineCourier] = courierVersion(baseline)
	}
	// Binaries built with -buildvcs=false carry no commit: the work tree's
	// says what the harness, at least, was.
	if desc, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		out["workTree"] = strings.TrimSpace(string(desc))
	}
	return out
}
