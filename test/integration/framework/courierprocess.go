package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
)

// CourierProcessOptions shape a CourierProcess.
type CourierProcessOptions struct {
	// Binary is the path of a courier binary.
	Binary string
	// Dir receives the Configuration file and the kubeconfig.
	Dir string
	// LogPath receives the process's output, appended; empty means
	// Dir/courier.log.
	LogPath string
	// Namespace is Courier's namespace on the manager, created if missing.
	Namespace string
	// Pprof serves net/http/pprof on a free port through
	// --pprof-bind-address, a flag that binaries built before it refuse.
	Pprof bool
	// ExtraArgs are added to the command line, for example a log level.
	ExtraArgs []string
	// ExtraConfig is YAML added to the Configuration, for fields only
	// newer binaries know.
	ExtraConfig string
}

// CourierProcess is a courier binary running as a child process against
// the manager, as CourierUser with the shipped ManagerRBAC. Unlike
// StartCourier's in-process manager, its CPU time and memory are its own,
// which is what benchmarks read from /proc.
type CourierProcess struct {
	PID     int
	LogPath string
	// Started is when the process was started, just before the fork.
	Started time.Time
	// HealthAddress and MetricsAddress serve the probes and /metrics.
	HealthAddress, MetricsAddress string
	// PprofAddress serves /debug/pprof; empty unless asked for.
	PprofAddress string

	proc *process
	done chan struct{}
}

// StartCourierProcess writes a Configuration (leader election off, probes
// and metrics on free loopback ports, metrics over plain HTTP for the
// benchmarks to scrape) and a kubeconfig for CourierUser, grants that user
// ManagerRBAC, starts the binary and waits until /healthz answers. Only
// fields every Configuration since metrics.secureServing has are written,
// since the decoder is strict and older binaries are run for comparison.
func (e *Environment) StartCourierProcess(ctx context.Context, opts CourierProcessOptions) (*CourierProcess, error) {
	if err := e.Manager.EnsureNamespace(ctx, opts.Namespace); err != nil {
		return nil, err
	}
	if err := e.Manager.grantCourier(ctx, e.RepoRoot, ManagerRBAC, opts.Namespace, nil); err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	p := &CourierProcess{
		LogPath:        opts.LogPath,
		HealthAddress:  fmt.Sprintf("127.0.0.1:%d", ports[0]),
		MetricsAddress: fmt.Sprintf("127.0.0.1:%d", ports[1]),
	}
	if p.LogPath == "" {
		p.LogPath = filepath.Join(opts.Dir, "courier.log")
	}
	configPath := filepath.Join(opts.Dir, "courier-config.yaml")
	config := fmt.Sprintf(`apiVersion: config.courier.dev/v1alpha1
kind: Configuration
namespace: %q
health: {bindAddress: %q}
metrics: {bindAddress: %q, secureServing: false}
leaderElection: {leaderElect: false}
%s
`, opts.Namespace, p.HealthAddress, p.MetricsAddress, opts.ExtraConfig)
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("writing Courier's configuration: %w", err)
	}
	kubeconfigPath := filepath.Join(opts.Dir, "courier.kubeconfig")
	if err := e.Manager.WriteKubeconfig(CourierUser, kubeconfigPath); err != nil {
		return nil, err
	}
	args := []string{"--config", configPath, "--kubeconfig", kubeconfigPath}
	if opts.Pprof {
		p.PprofAddress = fmt.Sprintf("127.0.0.1:%d", ports[2])
		args = append(args, "--pprof-bind-address", p.PprofAddress)
	}
	args = append(args, opts.ExtraArgs...)
	// Its own process group: the terminal's Ctrl-C then reaches the caller
	// alone, which stops Courier by PID once it has what it needs.
	p.proc = &process{name: "courier", path: opts.Binary, args: args, logPath: p.LogPath, ownGroup: true}
	p.Started = time.Now()
	if err := p.proc.start(); err != nil {
		return nil, err
	}
	p.PID, p.done = p.proc.pid(), p.proc.done
	if err := p.waitHealthy(ctx); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

func (p *CourierProcess) waitHealthy(ctx context.Context) error {
	url := "http://" + p.HealthAddress + "/healthz"
	httpClient := &http.Client{Timeout: time.Second}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("courier exited; see %s", p.LogPath)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for courier (PID %d) to be healthy: %w", p.PID, err)
	}
	return nil
}

// Done is closed when the process has ended, on its own or stopped.
func (p *CourierProcess) Done() <-chan struct{} {
	return p.done
}

// ExitErr is how the process ended (nil for a zero exit status), once Done
// is closed.
func (p *CourierProcess) ExitErr() error {
	<-p.done
	return p.proc.exitErr
}

// Stop sends SIGTERM to the PID, then SIGKILL after a grace period, and
// waits for the process. Stopping a stopped process does nothing.
func (p *CourierProcess) Stop() error {
	return p.proc.stop()
}

// RegisterWorkers grants CourierUser the shipped WorkerRBAC on every
// worker, and creates on the manager, for each, a kubeconfig Secret for
// that user in namespace and a WorkerCluster named as the worker, as
// ConnectWorkers does for an in-process Courier. It does not wait for a
// connection: Courier may not be running yet. It returns the names.
func (e *Environment) RegisterWorkers(ctx context.Context, namespace string) ([]string, error) {
	if err := e.Manager.EnsureNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	var names []string
	for _, worker := range e.Workers {
		if err := worker.grantCourier(ctx, e.RepoRoot, WorkerRBAC, "", nil); err != nil {
			return nil, err
		}
		data, err := worker.Kubeconfig(CourierUser)
		if err != nil {
			return nil, err
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: worker.Name, Namespace: namespace},
			Data:       map[string][]byte{"kubeconfig": data},
		}
		if err := e.Manager.Client.Create(ctx, secret); err != nil {
			return nil, fmt.Errorf("creating kubeconfig Secret %s: %w", worker.Name, err)
		}
		if err := e.Manager.Client.Create(ctx, couriertesting.MakeWorkerCluster(worker.Name).Obj()); err != nil {
			return nil, fmt.Errorf("creating WorkerCluster %s: %w", worker.Name, err)
		}
		names = append(names, worker.Name)
	}
	return names, nil
}

// WaitWorkersActive waits until each named WorkerCluster reports Active,
// which a Courier running outside the process shows only in status.
func (e *Environment) WaitWorkersActive(ctx context.Context, names []string) error {
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			wc := &courier.WorkerCluster{}
			if err := e.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc); err != nil {
				return false, err
			}
			return meta.IsStatusConditionTrue(wc.Status.Conditions, courier.WorkerClusterActive), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for WorkerCluster %s to be Active: %w", name, err)
		}
	}
	return nil
}

// EnsureNamespace creates the namespace unless it exists.
func (c *Cluster) EnsureNamespace(ctx context.Context, name string) error {
	err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on %s: %w", name, c.Name, err)
	}
	return nil
}
