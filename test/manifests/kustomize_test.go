package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// kustomizeNamespace is config/default's namespace.
const kustomizeNamespace = "courier-system"

// defaultObjects are the objects config/default builds, with more.
func defaultObjects(namespace string, more ...string) []string {
	return sortedIDs(append([]string{
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
		"Namespace " + namespace,
		"Role courier-manager-role",
		"RoleBinding courier-manager-rolebinding",
		"Secret courier-webhook-server-cert",
		"Service courier-metrics-service",
		"Service courier-webhook-service",
		"ServiceAccount courier-controller-manager",
		"ValidatingWebhookConfiguration courier-validating-webhook-configuration",
	}, more...))
}

// kustomizeCases are config/default as shipped and after the `kustomize
// edit` commands docs/install.md gives.
var kustomizeCases = map[string]struct {
	edits     [][]string
	namespace string
	want      []string
	// wantCertManagement is the Configuration's webhook.certManagement.
	wantCertManagement configv1alpha1.CertManagement
	check              func(t *testing.T, in *install)
}{
	"as shipped": {
		namespace: kustomizeNamespace, want: defaultObjects(kustomizeNamespace), wantCertManagement: configv1alpha1.CertManagementInternal,
	},
	"another namespace, by its one line": {
		edits:     [][]string{{"set", "namespace", "batch-system"}},
		namespace: "batch-system", want: defaultObjects("batch-system"), wantCertManagement: configv1alpha1.CertManagementInternal,
	},
	"the prometheus component": {
		edits:     [][]string{{"add", "component", "../components/prometheus"}},
		namespace: kustomizeNamespace,
		want: defaultObjects(kustomizeNamespace, "ClusterRoleBinding courier-prometheus-metrics-reader", "ConfigMap courier-grafana-dashboard",
			"PrometheusRule courier-alerts", "ServiceMonitor courier-controller-manager-metrics-monitor"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		check: func(t *testing.T, in *install) {
			sm := in.find("ServiceMonitor", "courier-controller-manager-metrics-monitor")
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			tls, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "tlsConfig")
			want := map[string]any{"serverName": "courier-metrics-service.courier-system.svc", "insecureSkipVerify": true}
			if diff := cmp.Diff(want, tls); diff != "" {
				t.Errorf("ServiceMonitor tlsConfig (-want +got):\n%s", diff)
			}
			checkAlerts(t, in.find("PrometheusRule", "courier-alerts"))
		},
	},
	"the cert-manager component in another namespace": {
		edits:     [][]string{{"add", "component", "../components/cert-manager"}, {"set", "namespace", "batch-system"}},
		namespace: "batch-system",
		want: defaultObjects("batch-system", "Certificate courier-metrics-server-cert", "Certificate courier-webhook-server-cert",
			"Issuer courier-selfsigned-issuer", "Secret courier-metrics-server-cert"),
		wantCertManagement: configv1alpha1.CertManagementExternal,
		check: func(t *testing.T, in *install) {
			checkCertificate(t, in, "courier-webhook-server-cert", "courier-webhook-service", in.config.Webhook.CertDir)
			checkCertificate(t, in, "courier-metrics-server-cert", "courier-metrics-service", in.config.Metrics.CertDir)
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				for _, obj := range in.ofKind(kind) {
					if got := obj.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "batch-system/courier-webhook-server-cert" {
						t.Errorf("%s %s inject-ca-from = %q, want batch-system/courier-webhook-server-cert", kind, obj.GetName(), got)
					}
				}
			}
		},
	},
	"both components": {
		edits:     [][]string{{"add", "component", "../components/prometheus", "../components/cert-manager"}},
		namespace: kustomizeNamespace,
		want: defaultObjects(kustomizeNamespace, "Certificate courier-metrics-server-cert", "Certificate courier-webhook-server-cert",
			"ClusterRoleBinding courier-prometheus-metrics-reader", "ConfigMap courier-grafana-dashboard", "Issuer courier-selfsigned-issuer",
			"PrometheusRule courier-alerts", "Secret courier-metrics-server-cert", "ServiceMonitor courier-controller-manager-metrics-monitor"),
		wantCertManagement: configv1alpha1.CertManagementExternal,
		check: func(t *testing.T, in *install) {
			sm := in.find("ServiceMonitor", "courier-controller-manager-metrics-monitor")
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			tls, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "tlsConfig")
			want := map[string]any{"serverName": "courier-metrics-service.courier-system.svc",
				"ca": map[string]any{"secret": map[string]any{"name": "courier-metrics-server-cert", "key": "ca.crt"}}}
			if diff := cmp.Diff(want, tls); diff != "" {
				t.Errorf("ServiceMonitor tlsConfig (-want +got):\n%s", diff)
			}
		},
	},
}

func TestKustomizeDefault(t *testing.T) {
	root := repoRoot(t)
	for name, tc := range kustomizeCases {
		t.Run(name, func(t *testing.T) {
			m, err := buildDefaultWith(root, t.TempDir(), tc.edits...)
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
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("config/default objects (-want +got):\n%s", diff)
			}
			in := checkInstall(t, m, tc.namespace)
			if !*in.config.Webhook.Enable || in.config.Webhook.CertManagement != tc.wantCertManagement {
				t.Errorf("config/default's Configuration: webhook enable %v, certManagement %q; want on, %q", *in.config.Webhook.Enable, in.config.Webhook.CertManagement, tc.wantCertManagement)
			}
			if tc.check != nil {
				tc.check(t, in)
			}
		})
	}
}

// checkCertificate asserts that a cert-manager Certificate is for a
// Service of the install, and that its Secret is mounted where the
// Configuration reads it.
func checkCertificate(t *testing.T, in *install, name, service, certDir string) {
	t.Helper()
	cert := in.find("Certificate", name)
	if cert == nil {
		t.Fatalf("no Certificate %s: %v", name, in.ids())
	}
	if in.find("Service", service) == nil {
		t.Errorf("Certificate %s is for Service %s, which is not rendered", name, service)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	want := []string{service + "." + in.namespace + ".svc", service + "." + in.namespace + ".svc.cluster.local"}
	if diff := cmp.Diff(want, dnsNames); diff != "" {
		t.Errorf("Certificate %s dnsNames (-want +got):\n%s", name, diff)
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if in.find("Issuer", issuer) == nil {
		t.Errorf("Certificate %s is issued by Issuer %q, which is not rendered", name, issuer)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if got := mountedSecret(in.deployment, certDir); got != secret {
		t.Errorf("the Configuration reads %s, where Secret %q is mounted, not Certificate %s's %q", certDir, got, name, secret)
	}
}

// checkAlerts asserts that a rendered PrometheusRule has the rules of
// config/components/prometheus/courier-alerts.yaml.
func checkAlerts(t *testing.T, rule *unstructured.Unstructured) {
	t.Helper()
	if rule == nil {
		t.Fatal("no PrometheusRule")
	}
	alerts, err := framework.ReadManifests(filepath.Join(repoRoot(t), "config/components/prometheus/courier-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(alerts[0].Object["spec"], rule.Object["spec"]); diff != "" {
		t.Errorf("PrometheusRule %s differs from courier-alerts.yaml (-file +rendered):\n%s", rule.GetName(), diff)
	}
}

// The cert-manager component replaces config/manager's Configuration:
// they must differ only in what cert-manager changes.
func TestCertManagerConfiguration(t *testing.T) {
	root := repoRoot(t)
	load := func(path string) *configv1alpha1.Configuration {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		cfg := &configv1alpha1.Configuration{}
		if err := yamlUnmarshalStrict(data, cfg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return cfg
	}
	base := load("config/manager/config.yaml")
	withCertManager := load("config/components/cert-manager/config.yaml")
	base.Webhook.CertManagement = configv1alpha1.CertManagementExternal
	if base.Metrics == nil {
		base.Metrics = &configv1alpha1.MetricsEndpoint{}
	}
	base.Metrics.CertDir = "/tmp/k8s-metrics-server/serving-certs"
	if diff := cmp.Diff(base, withCertManager); diff != "" {
		t.Errorf("config/components/cert-manager/config.yaml differs from config/manager/config.yaml in more than its certificates (-manager +component):\n%s", diff)
	}
}

// TestKustomizeParts builds each part of config/ that config/default does
// not include.
func TestKustomizeParts(t *testing.T) {
	m, err := buildKustomization(repoRoot(t), "config/samples")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AdmissionCheck courier", "DispatchPolicy eu", "WorkerCluster worker-1"}
	if diff := cmp.Diff(want, m.ids()); diff != "" {
		t.Errorf("config/samples objects (-want +got):\n%s", diff)
	}
}

// TestKustomizeWorker builds config/worker: Courier's RBAC on a worker and
// the fence.
func TestKustomizeWorker(t *testing.T) {
	m, err := buildKustomization(repoRoot(t), "config/worker")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ClusterRole courier-fence", "ClusterRole courier-worker",
		"ClusterRoleBinding courier-fence", "ClusterRoleBinding courier-worker",
		"Deployment courier-fence", "Namespace courier-system",
		"Role courier-fence", "Role courier-heartbeat",
		"RoleBinding courier-fence", "RoleBinding courier-heartbeat",
		"Secret courier-token", "ServiceAccount courier", "ServiceAccount courier-fence",
	}
	if diff := cmp.Diff(want, m.ids()); diff != "" {
		t.Errorf("config/worker objects (-want +got):\n%s", diff)
	}
}

// TestKustomizeWorkerFence checks the fence config/worker installs: a
// hardened pod running /courier-fence as its own ServiceAccount, bound to
// what it needs; and, with the with-manager component, the flags and the
// volume that let it read its WorkerCluster on the manager.
func TestKustomizeWorkerFence(t *testing.T) {
	root := repoRoot(t)
	m, err := buildKustomization(root, "config/worker")
	if err != nil {
		t.Fatal(err)
	}
	d := as[appsv1.Deployment](t, m, "Deployment")
	checkPodSecurity(t, d)
	pod := d.Spec.Template.Spec
	if diff := cmp.Diff([]string{"/courier-fence"}, pod.Containers[0].Command); diff != "" {
		t.Errorf("fence command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--namespace=$(POD_NAMESPACE)", "--identity=$(POD_NAME)"}, pod.Containers[0].Args); diff != "" {
		t.Errorf("fence args (-want +got):\n%s", diff)
	}
	if pod.ServiceAccountName != "courier-fence" {
		t.Errorf("the fence runs as ServiceAccount %q, want courier-fence", pod.ServiceAccountName)
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		binding := convert[rbacv1.RoleBinding](t, m.find(kind, "courier-fence"))
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "courier-fence", Namespace: kustomizeNamespace}}
		if diff := cmp.Diff(want, binding.Subjects); diff != "" {
			t.Errorf("%s courier-fence subjects (-want +got):\n%s", kind, diff)
		}
	}
	for _, obj := range m.ofKind("ClusterRole") {
		for _, rule := range convert[rbacv1.ClusterRole](t, obj).Rules {
			if slices.Contains(rule.Resources, "leases") {
				t.Errorf("ClusterRole %s grants leases cluster-wide; they belong in a Role in the fence's namespace", obj.GetName())
			}
		}
	}

	m, err = buildWorkerWithManager(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pod = as[appsv1.Deployment](t, m, "Deployment").Spec.Template.Spec
	wantArgs := []string{"--namespace=$(POD_NAMESPACE)", "--identity=$(POD_NAME)", "--manager-kubeconfig=/etc/courier-fence/manager/kubeconfig", "--worker-cluster=worker-1"}
	if diff := cmp.Diff(wantArgs, pod.Containers[0].Args); diff != "" {
		t.Errorf("fence args with the manager (-want +got):\n%s", diff)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "courier-fence-manager" {
		t.Errorf("fence volumes with the manager = %+v, want Secret courier-fence-manager", pod.Volumes)
	}
}
