package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

// ChartValues is the values file, relative to the repository root, that the
// local environment and hack/e2e-kind.sh install Courier's chart with.
const ChartValues = "e2e/courier-values.yaml"

// chartServiceAccount is the ServiceAccount the chart runs Courier as.
const chartServiceAccount = "courier"

// renderedChart is what installChart leaves to its caller.
type renderedChart struct {
	// config is the Configuration from the chart's ConfigMap.
	config string
	// webhooks are the chart's webhook configurations, not applied: they
	// call a Service, and the local Courier is a process.
	webhooks []*unstructured.Unstructured
}

// installChart renders Courier's chart with bin/helm and applies it to the
// manager, so that the local Courier runs with the chart's ServiceAccount,
// RBAC and Configuration. The Deployment is only dry-run, which has the API
// server validate it: its image does not exist here, and Courier runs as a
// process instead.
func (e *Env) installChart(ctx context.Context, c client.Client, set ...string) (*renderedChart, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	// Courier runs as a process whose metrics port only this machine
	// reaches: plain HTTP, for the benchmarks and the soak to scrape.
	args := []string{"template", "courier", filepath.Join(root, "charts/courier"),
		"--namespace", CourierNamespace, "--values", filepath.Join(root, ChartValues), "--set", "metrics.secureServing=false"}
	for _, s := range set {
		// Strings stay strings (a duration, an address), but a boolean
		// must reach the Configuration as one.
		flag := "--set-string"
		if strings.HasSuffix(s, "=true") || strings.HasSuffix(s, "=false") {
			flag = "--set"
		}
		args = append(args, flag, s)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.Bin, "helm"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("rendering the chart: helm %v: %w: %s", args, err, stderr.String())
	}
	objs, err := framework.DecodeManifests(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("decoding the rendered chart: %w", err)
	}
	out := &renderedChart{}
	var install, dryRun []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetKind() {
		case "Deployment":
			dryRun = append(dryRun, obj)
			continue
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			out.webhooks = append(out.webhooks, obj)
			continue
		case "ConfigMap":
			out.config, _, _ = unstructured.NestedString(obj.Object, "data", "config.yaml")
		}
		install = append(install, obj)
	}
	if out.config == "" {
		return nil, fmt.Errorf("the rendered chart has no ConfigMap with config.yaml")
	}
	if len(out.webhooks) == 0 {
		return nil, fmt.Errorf("the rendered chart has no webhook configurations")
	}
	if err := framework.Apply(ctx, c, install, fieldOwner); err != nil {
		return nil, err
	}
	if err := framework.Apply(ctx, c, dryRun, fieldOwner, client.DryRunAll); err != nil {
		return nil, fmt.Errorf("dry-running the chart's Deployment: %w", err)
	}
	return out, nil
}
