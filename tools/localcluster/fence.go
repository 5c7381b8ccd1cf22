package localcluster

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// fenceBinary is the worker-side fence (cmd/courier-fence), which `make
// build` builds into bin/ once it exists.
const fenceBinary = "courier-fence"

// fencePeer is the name a worker's fence is recorded under, after its
// cluster's: "<worker>/courier-fence".
const fencePeer = "courier-fence"

// localFence is the fence's timing on the local clusters: short, so that a
// lost worker's job moves within two minutes, as the e2e suite's
// lost-worker spec and the soak's faults need; a heartbeat every 2s keeps
// a loaded machine's late renewal well within the timeout.
var localFence = configv1alpha1.Fence{
	Timeout:           &metav1.Duration{Duration: 10 * time.Second},
	HeartbeatInterval: &metav1.Duration{Duration: 2 * time.Second},
	StopGrace:         &metav1.Duration{Duration: 10 * time.Second},
}

// FenceAvailable says whether bin holds the fence.
func FenceAvailable(bin string) bool {
	_, err := os.Stat(filepath.Join(bin, fenceBinary))
	return err == nil
}

// lostWorkerSettings are the chart values that set Courier's lost-worker
// policy explicitly: Fenced when the workers run a fence, with the fence's
// short timing and a workerLostTimeout raised to the least the API allows
// for it (MinFencedLostTimeout), else Timeout, today's behaviour, with the
// values file's workerLostTimeout. It says which, for the log.
func lostWorkerSettings(root string, fenced bool) (set []string, summary string, err error) {
	lost, err := valuesLostTimeout(root)
	if err != nil {
		return nil, "", err
	}
	if !fenced {
		return []string{"configuration.lostWorkerPolicy=" + string(courier.LostWorkerTimeout)},
			fmt.Sprintf("Timeout: no worker runs a fence (it runs only when asked for and bin/%s exists), and a lost worker's jobs move %s after it is lost, whether or not they still run there",
				fenceBinary, lost), nil
	}
	// Whole seconds of five: the least that leaves the fence its margin.
	least := time.Duration(math.Ceil(configv1alpha1.MinFencedLostTimeout(&localFence).Seconds()/5)) * 5 * time.Second
	lost = max(lost, least)
	set = []string{
		"configuration.lostWorkerPolicy=" + string(courier.LostWorkerFenced),
		"configuration.workerLostTimeout=" + lost.String(),
		"configuration.fence.timeout=" + localFence.Timeout.Duration.String(),
		"configuration.fence.heartbeatInterval=" + localFence.HeartbeatInterval.Duration.String(),
		"configuration.fence.stopGrace=" + localFence.StopGrace.Duration.String(),
	}
	return set, fmt.Sprintf("Fenced: bin/%s runs on every worker and stops Courier's copies there %s after Courier's heartbeat stops, unless the manager says Courier still counts on the worker; a lost worker's jobs move after %s, once the fence must have stopped them",
		fenceBinary, localFence.Timeout.Duration, lost), nil
}

// valuesLostTimeout reads workerLostTimeout from ChartValues.
func valuesLostTimeout(root string) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(root, ChartValues))
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", ChartValues, err)
	}
	var values struct {
		Configuration struct {
			WorkerLostTimeout metav1.Duration `json:"workerLostTimeout"`
		} `json:"configuration"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return 0, fmt.Errorf("decoding %s: %w", ChartValues, err)
	}
	return values.Configuration.WorkerLostTimeout.Duration, nil
}

// startFences starts bin/courier-fence on every worker, against the
// worker's API server directly and reading the manager, and waits until
// each answers its health probe.
func (e *Env) startFences(ctx context.Context, logf func(string, ...any)) error {
	state, err := LoadState(e.Dir)
	if err != nil {
		return err
	}
	for _, w := range e.Workers {
		ports, err := framework.FreePorts(1)
		if err != nil {
			return err
		}
		dir := filepath.Join(e.Dir, w, fencePeer)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		health := fmt.Sprintf("127.0.0.1:%d", ports[0])
		args := []string{filepath.Join(e.Bin, fenceBinary),
			"--kubeconfig", e.Kubeconfig(w),
			"--namespace", CourierNamespace,
			"--identity", "fence-" + w,
			"--poll-interval", "1s",
			"--manager-kubeconfig", e.Kubeconfig(e.Manager),
			"--worker-cluster", w,
			"--health-probe-bind-address", health,
			"--metrics-bind-address", "0",
		}
		logf("Starting the fence on %s", w)
		proc, err := startProcess(w+"/"+fencePeer, filepath.Join(dir, fencePeer+".log"), nil, args...)
		if err != nil {
			return err
		}
		state.Processes = append(state.Processes, proc)
		if err := state.save(e.Dir); err != nil {
			return err
		}
		if err := waitHealthy(ctx, proc, health); err != nil {
			return err
		}
	}
	return nil
}

// waitHealthy waits until a process answers its liveness probe at addr.
func waitHealthy(ctx context.Context, proc *Process, addr string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !proc.alive() {
			return false, fmt.Errorf("%s exited; see %s", proc.Name, proc.Log)
		}
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to answer its health probe (log: %s): %w", proc.Name, proc.Log, err)
	}
	return nil
}

// StartFenceIfDown starts a worker's fence again if it is recorded and
// exited, as a kubelet restarts its pod: one that lost its API server may
// exit. It reports whether it did.
func StartFenceIfDown(dir, cluster string) (bool, error) {
	name := cluster + "/" + fencePeer
	state, err := LoadState(dir)
	if err != nil {
		return false, err
	}
	p, err := state.process(name)
	if err != nil || p.alive() {
		return false, nil
	}
	if _, err := RestartProcess(dir, name); err != nil {
		return false, err
	}
	return true, nil
}
