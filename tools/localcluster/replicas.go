package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/courierdev/courier/test/integration/framework"
)

// CourierProcess is the name under which the first Courier process is
// recorded; replicas are recorded as CourierProcess-<n>.
const CourierProcess = "manager/courier"

// StartCourierReplica starts one more Courier process on the manager, as a
// Deployment's second replica would run: the first one's Configuration and
// identity, with leader election on (Courier's default) so that one replica
// dispatches, and health, metrics and webhook ports of its own. The webhook
// configurations keep calling the first process. It returns the name the
// replica is recorded under, for KillProcess and RestartProcess.
func (e *Env) StartCourierReplica(n int) (string, error) {
	first := filepath.Join(e.Dir, e.Manager, "courier")
	data, err := os.ReadFile(filepath.Join(first, "config.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading the first Courier's config (start Courier first): %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("decoding the first Courier's config: %w", err)
	}
	if le, _, _ := unstructured.NestedBool(doc, "leaderElection", "leaderElect"); !le {
		if _, found, _ := unstructured.NestedFieldNoCopy(doc, "leaderElection", "leaderElect"); found {
			return "", fmt.Errorf("the first Courier's config turns leader election off; replicas would both dispatch")
		}
	}
	ports, err := framework.FreePorts(3)
	if err != nil {
		return "", err
	}
	for path, v := range map[string]any{
		"health.bindAddress":  fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"metrics.bindAddress": fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"webhook.port":        int64(ports[2]),
	} {
		section, field, _ := strings.Cut(path, ".")
		if err := unstructured.SetNestedField(doc, v, section, field); err != nil {
			return "", fmt.Errorf("setting %s in the replica's config: %w", path, err)
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding the replica's config: %w", err)
	}
	name := fmt.Sprintf("%s-%d", CourierProcess, n)
	dir := filepath.Join(e.Dir, e.Manager, fmt.Sprintf("courier-%d", n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, out, 0o600); err != nil {
		return "", fmt.Errorf("writing the replica's config: %w", err)
	}
	state, err := LoadState(e.Dir)
	if err != nil {
		return "", err
	}
	args := append([]string{filepath.Join(e.Bin, "courier"), "--config", config, "--kubeconfig", filepath.Join(first, "kubeconfig")}, e.courierLogArgs()...)
	proc, err := startProcess(name, filepath.Join(dir, "courier.log"), nil, args...)
	if err != nil {
		return "", err
	}
	state.Processes = append(state.Processes, proc)
	return name, state.save(e.Dir)
}
