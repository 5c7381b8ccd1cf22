package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

// ChartValues is the values file, relative to the repository root, that the
// local environment and hack/e2e-kind.sh install Courier's chart with.
const ChartValues = "e2e/courier-values.yaml"

// chartServiceAccount is the ServiceAccount the chart runs Courier as.
const chartServiceAccount = "courier"

// installChart renders Courier's chart with bin/helm and applies it to the
// manager, so that the local Courier runs with the chart's ServiceAccount,
// RBAC and Configuration. The Deployment is only dry-run, which has the API
// server validate it: its image does not exist here, and Courier runs as a
// process instead. It returns the Configuration from the chart's ConfigMap.
func (e *Env) installChart(ctx context.Context, c client.Client, set ...string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	args := []string{"template", "courier", filepath.Join(root, "charts/courier"),
		"--namespace", CourierNamespace, "--values", filepath.Join(root, ChartValues)}
	for _, s := range set {
		args = append(args, "--set-string", s)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.Bin, "helm"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("rendering the chart: helm %v: %w: %s", args, err, stderr.String())
	}
	objs, err := framework.DecodeManifests(stdout.Bytes())
	if err != nil {
		return "", fmt.Errorf("decoding the rendered chart: %w", err)
	}
	var config string
	var install, dryRun []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetKind() {
		case "Deployment":
			dryRun = append(dryRun, obj)
			continue
		case "ConfigMap":
			config, _, _ = unstructured.NestedString(obj.Object, "data", "config.yaml")
		}
		install = append(install, obj)
	}
	if config == "" {
		return "", fmt.Errorf("the rendered chart has no ConfigMap with config.yaml")
	}
	if err := framework.Apply(ctx, c, install, fieldOwner); err != nil {
		return "", err
	}
	if err := framework.Apply(ctx, c, dryRun, fieldOwner, client.DryRunAll); err != nil {
		return "", fmt.Errorf("dry-running the chart's Deployment: %w", err)
	}
	return config, nil
}
