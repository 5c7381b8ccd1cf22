package manifests

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

// kustomizeNamespace is config/default's namespace.
const kustomizeNamespace = "courier-system"

func TestKustomizeDefault(t *testing.T) {
	m, err := buildKustomization(repoRoot(t), "config/default")
	if err != nil {
		t.Fatal(err)
	}
	ids := m.ids()
	// The ConfigMap's name ends with a hash of the Configuration.
	for i, id := range ids {
		if strings.HasPrefix(id, "ConfigMap courier-manager-config-") {
			ids[i] = "ConfigMap courier-manager-config-<hash>"
		}
	}
	want := []string{
		"ClusterRole courier-dispatchpolicy-editor-role",
		"ClusterRole courier-dispatchpolicy-viewer-role",
		"ClusterRole courier-manager-role",
		"ClusterRole courier-metrics-reader",
		"ClusterRole courier-workercluster-editor-role",
		"ClusterRole courier-workercluster-viewer-role",
		"ClusterRoleBinding courier-manager-rolebinding",
		"ConfigMap courier-manager-config-<hash>",
		"CustomResourceDefinition dispatchpolicies.courier.dev",
		"CustomResourceDefinition workerclusters.courier.dev",
		"Deployment courier-controller-manager",
		"MutatingWebhookConfiguration courier-mutating-webhook-configuration",
		"Namespace courier-system",
		"Role courier-manager-role",
		"RoleBinding courier-manager-rolebinding",
		"Secret courier-webhook-server-cert",
		"Service courier-metrics-service",
		"Service courier-webhook-service",
		"ServiceAccount courier-controller-manager",
		"ValidatingWebhookConfiguration courier-validating-webhook-configuration",
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("config/default objects (-want +got):\n%s", diff)
	}
	in := checkInstall(t, m, kustomizeNamespace)
	if !*in.config.Webhook.Enable || in.config.Webhook.CertManagement != configv1alpha1.CertManagementInternal {
		t.Errorf("config/default's Configuration: webhook enable %v, certManagement %q; want on, Internal", *in.config.Webhook.Enable, in.config.Webhook.CertManagement)
	}
}

// TestKustomizeParts builds each part of config/ that config/default does
// not include, and the worker RBAC.
func TestKustomizeParts(t *testing.T) {
	cases := map[string]struct {
		dir  string
		want []string
	}{
		"prometheus": {dir: "config/prometheus", want: []string{"ConfigMap grafana-dashboard", "ServiceMonitor controller-manager-metrics-monitor"}},
		"samples": {dir: "config/samples", want: []string{
			"AdmissionCheck courier", "DispatchPolicy eu", "WorkerCluster worker-1",
		}},
	}
	root := repoRoot(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := buildKustomization(root, tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, m.ids()); diff != "" {
				t.Errorf("%s objects (-want +got):\n%s", tc.dir, diff)
			}
		})
	}
}
