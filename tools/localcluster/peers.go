package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/courierdev/courier/test/integration/framework"
)

// peer is one controller process of a cluster, with its webhooks.
type peer struct {
	name string
	// args builds the command line from the binary directory, the
	// config path and the kubeconfig path.
	args func(bin, config, kubeconfig string) []string
	// config renders the peer's configuration file.
	config func(p ports, certDir string) string
	// env holds extra environment variables, keyed by the peer's files dir.
	env      func(dir string) []string
	webhooks func(modDirs map[string]string) webhookSet
}

// ports are the ports one peer process listens on.
type ports struct {
	webhook, health int
}

// The Kueue integrations Courier's demos use: TrainJob and batch Job.
// Every Kueue, manager's and workers', whatever the dispatcher, runs the
// reconciler concurrency of Kueue's install manifests
// (config/components/manager/controller_manager_config.yaml), not
// controller-runtime's one at a time. The manifests give TrainJob no
// entry; it gets batch Job's 5, as the same kind of job integration:
// run one at a time, it finishes Workloads tens of seconds late under a
// burst.
var kueuePeer = peer{
	name: "kueue",
	args: func(bin, config, kubeconfig string) []string {
		return []string{filepath.Join(bin, "kueue"), "--config", config, "--kubeconfig", kubeconfig}
	},
	config: func(p ports, certDir string) string {
		return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: %d, certDir: %s}
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
leaderElection: {leaderElect: false}
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
    TrainJob.trainer.kubeflow.org: 5
integrations:
  frameworks: ["batch/job", "trainer.kubeflow.org/trainjob"]
featureGates: {VisibilityOnDemand: false}
`, p.webhook, certDir, p.health)
	},
	webhooks: func(mod map[string]string) webhookSet {
		return webhookSet{
			file: filepath.Join(mod["sigs.k8s.io/kueue"], "config/components/webhook/manifests.yaml"),
			names: []string{"mclusterqueue.kb.io", "mresourceflavor.kb.io", "mworkload.kb.io", "vclusterqueue.kb.io",
				"vcohort.kb.io", "vresourceflavor.kb.io", "vworkload.kb.io", "mjob.kb.io", "vjob.kb.io", "mtrainjob.kb.io", "vtrainjob.kb.io"},
			prefix: "kueue",
		}
	},
}

var trainerPeer = peer{
	name: "trainer",
	args: func(bin, config, kubeconfig string) []string {
		return []string{filepath.Join(bin, "trainer-controller-manager"), "--config", config, "--kubeconfig", kubeconfig}
	},
	config: func(p ports, _ string) string {
		return fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
certManagement: {enable: false}
webhook: {host: 127.0.0.1, port: %d}
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
`, p.webhook, p.health)
	},
	// Trainer reads its serving certificate from controller-runtime's
	// default directory under TMPDIR, so each process gets its own TMPDIR.
	env: func(dir string) []string { return []string{"TMPDIR=" + dir} },
	webhooks: func(mod map[string]string) webhookSet {
		return webhookSet{
			file: filepath.Join(mod["github.com/kubeflow/trainer/v2"], "manifests/base/webhook/manifests.yaml"),
			names: []string{"defaulter.trainjob.trainer.kubeflow.org", "validator.clustertrainingruntime.trainer.kubeflow.org",
				"validator.trainingruntime.trainer.kubeflow.org", "validator.trainjob.trainer.kubeflow.org"},
			prefix: "trainer",
		}
	},
}

var jobsetPeer = peer{
	name: "jobset",
	args: func(bin, config, kubeconfig string) []string {
		return []string{filepath.Join(bin, "jobset"), "--config", config, "--kubeconfig", kubeconfig}
	},
	config: func(p ports, certDir string) string {
		return fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: %d, certDir: %s}
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
leaderElection: {leaderElect: false}
`, p.webhook, certDir, p.health)
	},
	webhooks: func(mod map[string]string) webhookSet {
		// JobSet's pod webhooks are left out: upstream narrows them to JobSet
		// pods with a kustomize patch, and simulated pods need nothing of them.
		return webhookSet{
			file:   filepath.Join(mod["sigs.k8s.io/jobset"], "config/components/webhook/manifests.yaml"),
			names:  []string{"mjobset.kb.io", "vjobset.kb.io"},
			prefix: "jobset",
		}
	},
}

// startPeer writes the peer's config and certificates under dir and starts
// it against kubeconfig.
func startPeer(pr peer, dir, bin, kubeconfig string, certPEM, keyPEM []byte) (*Process, ports, error) {
	free, err := framework.FreePorts(2)
	if err != nil {
		return nil, ports{}, err
	}
	p := ports{webhook: free[0], health: free[1]}
	certDir := filepath.Join(dir, "certs")
	if pr.env != nil {
		certDir = filepath.Join(dir, "k8s-webhook-server", "serving-certs")
	}
	if err := writeCert(certDir, certPEM, keyPEM); err != nil {
		return nil, p, err
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(pr.config(p, certDir)), 0o600); err != nil {
		return nil, p, fmt.Errorf("writing %s config: %w", pr.name, err)
	}
	var env []string
	if pr.env != nil {
		env = pr.env(dir)
	}
	proc, err := startProcess(pr.name, filepath.Join(dir, pr.name+".log"), env, pr.args(bin, config, kubeconfig)...)
	return proc, p, err
}

func writeCert(dir string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// waitServing waits until a peer answers its health probe and accepts TLS
// on its webhook port.
func waitServing(ctx context.Context, proc *Process, p ports) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !proc.alive() {
			return false, fmt.Errorf("%s exited; see %s", proc.Name, proc.Log)
		}
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.health))
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.webhook), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // A liveness probe only.
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to serve (log: %s): %w", proc.Name, proc.Log, err)
	}
	return nil
}
