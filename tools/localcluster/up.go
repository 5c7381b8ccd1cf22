package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

// Options shape a local environment.
type Options struct {
	// Dir holds everything: kubeconfigs, logs, state.
	Dir string
	// Bin holds the binaries hack/tools builds, and bin/courier.
	Bin string
	// Workers is the number of worker clusters.
	Workers int
	// GPUNodes and GPUsPerNode size each worker's simulated nodes.
	GPUNodes, GPUsPerNode int
	// Audit has the API servers log requests (AuditLog), for benchmarks
	// that count them: the manager's every request, the workers'
	// WorkerUser's and every identity's watches.
	Audit bool
	// CourierLogLevel is Courier's log verbosity; the e2e suite runs at 4,
	// so that a failure's logs hold every plan, the soak at 2. Set, the log
	// has nanosecond times, to be read beside the tests' own.
	CourierLogLevel int
	// CourierPprofAddress, when set, has Courier serve net/http/pprof there,
	// for benchmarks that profile it.
	CourierPprofAddress string
	// CourierValues are chart values set over the environment's own, as
	// helm's --set-string key=value, for a run that needs Courier
	// configured otherwise (the soak's self-fault window).
	CourierValues []string
	// Fence runs bin/courier-fence on every worker, when it is there, and
	// Courier under the Fenced policy with the fence's short timing. Off,
	// Courier runs under the chart values' policy (Timeout in
	// e2e/courier-values.yaml), whose lost-worker spec counts on a move
	// within workerLostTimeout.
	Fence bool
}

// Env is a running local environment.
type Env struct {
	Options
	// Manager and Workers are the cluster names.
	Manager string
	Workers []string
	// CA signs every webhook serving certificate.
	CA []byte
	// courierRoutes are the addresses Courier reaches workers at, where
	// not their API servers (RouteCourier).
	courierRoutes map[string]string
}

// Kubeconfig is the path of a cluster's kubeconfig, with embedded
// credentials.
func (e *Env) Kubeconfig(cluster string) string {
	return filepath.Join(e.Dir, cluster+".kubeconfig")
}

// restQPS and restBurst bound the harness's clients, high enough that
// they never pace a load.
const restQPS, restBurst = 200, 400

// RESTConfig returns the client configuration of a cluster, admin
// credentials included.
func (e *Env) RESTConfig(cluster string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig(cluster))
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig of %s: %w", cluster, err)
	}
	cfg.QPS, cfg.Burst = restQPS, restBurst
	return cfg, nil
}

// Client returns a client for a cluster, with Courier's scheme.
func (e *Env) Client(cluster string) (client.Client, error) {
	cfg, err := e.RESTConfig(cluster)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client of %s: %w", cluster, err)
	}
	return c, nil
}

// Up starts the clusters in parallel, installs the CRDs, starts Kueue on
// every cluster and Trainer and JobSet on the workers, with their webhooks.
// On error it stops what it started.
func Up(ctx context.Context, opts Options, logf func(string, ...any)) (env *Env, err error) {
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", opts.Dir, err)
	}
	state, err := LoadState(opts.Dir)
	if err != nil {
		return nil, err
	}
	if len(state.Clusters) > 0 {
		return nil, fmt.Errorf("an environment is already up in %s; run down first", opts.Dir)
	}
	env = &Env{Options: opts, Manager: "manager"}
	for i := range opts.Workers {
		env.Workers = append(env.Workers, fmt.Sprintf("worker-%d", i+1))
	}
	clusters := append([]string{env.Manager}, env.Workers...)
	state.Clusters = clusters
	if err := state.save(opts.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, Down(context.Background(), opts.Dir, opts.Bin))
		}
	}()

	stages, err := writeStages(opts.Dir)
	if err != nil {
		return nil, err
	}
	k := kwokctl{bin: opts.Bin, dir: opts.Dir}
	// One at a time: concurrent kwokctl runs pick the same free ports.
	// Each takes a few seconds.
	for _, name := range clusters {
		logf("Starting cluster %s", name)
		args := []string{"--config", stages}
		if opts.Audit {
			policy, err := writeAuditPolicy(opts.Dir, name == env.Manager)
			if err != nil {
				return nil, err
			}
			args = append(args, "--kube-audit-policy", policy)
		}
		kubeconfig, err := k.create(ctx, name, args...)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(env.Kubeconfig(name), kubeconfig, 0o600); err != nil {
			return nil, fmt.Errorf("writing kubeconfig of %s: %w", name, err)
		}
		nodes, gpus := 1, 0
		if name != env.Manager {
			nodes, gpus = opts.GPUNodes, opts.GPUsPerNode
		}
		if err := k.scaleGPUNodes(ctx, name, nodes, gpus); err != nil {
			return nil, err
		}
	}

	logf("Installing the CRDs of Courier, Kueue, Trainer and JobSet")
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	dirs, err := framework.CRDDirs(root)
	if err != nil {
		return nil, err
	}
	crds, err := framework.ReadCRDs(dirs)
	if err != nil {
		return nil, err
	}
	mods, err := framework.ModuleDirs(root, "sigs.k8s.io/kueue", "github.com/kubeflow/trainer/v2", "sigs.k8s.io/jobset")
	if err != nil {
		return nil, err
	}
	caPEM, certPEM, keyPEM, err := framework.ServingCertificate()
	if err != nil {
		return nil, err
	}
	env.CA = caPEM
	// Kueue, with its own cert management off, insists on metrics
	// certificates at this fixed path.
	if err := writeCert("/etc/kueue/metrics/certs", certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("writing Kueue's metrics certificates (Kueue reads them from a fixed path): %w", err)
	}

	for _, name := range clusters {
		c, err := env.Client(name)
		if err != nil {
			return nil, err
		}
		if err := framework.InstallCRDs(ctx, c, crds); err != nil {
			return nil, fmt.Errorf("installing CRDs on %s: %w", name, err)
		}
		peers := []peer{kueuePeer}
		if name != env.Manager {
			peers = append(peers, jobsetPeer, trainerPeer)
		}
		for _, pr := range peers {
			logf("Starting %s on %s", pr.name, name)
			dir := filepath.Join(opts.Dir, name, pr.name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("creating %s: %w", dir, err)
			}
			proc, p, err := startPeer(pr, dir, opts.Bin, env.Kubeconfig(name), certPEM, keyPEM)
			if err != nil {
				return nil, err
			}
			proc.Name = name + "/" + pr.name
			state.Processes = append(state.Processes, proc)
			if err := state.save(opts.Dir); err != nil {
				return nil, err
			}
			if err := waitServing(ctx, proc, p); err != nil {
				return nil, err
			}
			if err := pr.webhooks(mods).install(ctx, c, p.webhook, caPEM); err != nil {
				return nil, fmt.Errorf("installing %s webhooks on %s: %w", pr.name, name, err)
			}
		}
	}
	return env, nil
}

// StartCourier runs bin/courier on the manager with the given
// configuration and kubeconfig.
func (e *Env) StartCourier(config string, kubeconfig []byte) (*Process, error) {
	state, err := LoadState(e.Dir)
	if err != nil {
		return nil, err
	}
	path := e.courierConfigPath()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("writing Courier's config: %w", err)
	}
	kubeconfigPath := e.courierKubeconfigPath()
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing Courier's kubeconfig: %w", err)
	}
	args := append([]string{filepath.Join(e.Bin, "courier"), "--config", path, "--kubeconfig", kubeconfigPath}, e.courierLogArgs()...)
	if e.CourierPprofAddress != "" {
		args = append(args, "--pprof-bind-address", e.CourierPprofAddress)
	}
	proc, err := startProcess(e.Manager+"/courier", filepath.Join(dir, "courier.log"), nil, args...)
	if err != nil {
		return nil, err
	}
	state.Processes = append(state.Processes, proc)
	return proc, state.save(e.Dir)
}

// courierConfigPath is where StartCourier writes Courier's configuration.
func (e *Env) courierConfigPath() string {
	return filepath.Join(e.Dir, e.Manager, "courier", "config.yaml")
}

// courierKubeconfigPath is where StartCourier writes Courier's kubeconfig.
func (e *Env) courierKubeconfigPath() string {
	return filepath.Join(e.Dir, e.Manager, "courier", "kubeconfig")
}

// Down stops exactly what Up started: the recorded processes by PID, then
// each kwokctl cluster. It is safe to run on a partial or absent
// environment.
func Down(ctx context.Context, dir, bin string) error {
	state, err := LoadState(dir)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(state.Processes) - 1; i >= 0; i-- {
		if err := state.Processes[i].stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	k := kwokctl{bin: bin, dir: dir}
	for _, name := range state.Clusters {
		if err := k.delete(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(statePath(dir)))
	}
	return errors.Join(errs...)
}

// Status describes each recorded process: running or not, and its log.
func Status(dir string) (string, error) {
	state, err := LoadState(dir)
	if err != nil {
		return "", err
	}
	if len(state.Clusters) == 0 {
		return "No environment is up in " + dir + ".\n", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Clusters: %s (kubeconfigs in %s)\n", strings.Join(state.Clusters, ", "), dir)
	if state.CourierMetrics != "" {
		fmt.Fprintf(&b, "Courier's metrics: http://%s/metrics\n", state.CourierMetrics)
	}
	for _, p := range state.Processes {
		status := "running"
		if !p.alive() {
			status = "NOT RUNNING"
		}
		fmt.Fprintf(&b, "  %-24s PID %-7d %-11s %s\n", p.Name, p.PID, status, p.Log)
	}
	return b.String(), nil
}

// CollectLogs copies every log of the environment into out, for a failed
// run's artifacts.
func CollectLogs(dir, out string) error {
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	return filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".log") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(out, strings.ReplaceAll(rel, string(filepath.Separator), "_"))
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
}

// StopCluster stops one cluster's control plane; StartCluster starts it
// again. The controllers running against it retry until it is back.
func StopCluster(ctx context.Context, dir, bin, name string) error {
	return kwokctl{bin: bin, dir: dir}.stop(ctx, name)
}

// StartCluster starts a cluster StopCluster stopped.
func StartCluster(ctx context.Context, dir, bin, name string) error {
	return kwokctl{bin: bin, dir: dir}.start(ctx, name)
}

// courierLogArgs are the flags that give Courier's log its verbosity.
func (e *Env) courierLogArgs() []string {
	if e.CourierLogLevel <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("--zap-log-level=%d", e.CourierLogLevel), "--zap-time-encoding=rfc3339nano"}
}
