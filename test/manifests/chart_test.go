package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// chartCase is one values variant of the chart and what it must render.
type chartCase struct {
	release, namespace string
	args               []string
	// wantObjects are the rendered objects, "Kind name", sorted.
	wantObjects []string
	// Expected Configuration fields the chart sets.
	wantCertManagement configv1alpha1.CertManagement
	wantLeaderElect    *bool
	// wantJobResources are the resources the managedBy webhook sees.
	wantJobResources []string
	// wantCertRules is whether Courier may write webhook configurations
	// and its Secret (Internal certificate management).
	wantCertRules bool
	// wantInjectCA is cert-manager's inject-ca-from annotation.
	wantInjectCA string
	wantReplicas int32
	wantPDB      bool
	// check asserts what else the variant must render.
	check func(t *testing.T, in *install)
}

// objectsOf lists the objects a release whose names start with fullname
// renders by default, plus more.
func objectsOf(fullname string, more ...string) []string {
	ids := append([]string{
		"ClusterRole " + fullname,
		"ClusterRole " + fullname + "-metrics-reader",
		"ClusterRole " + fullname + "-dispatchpolicy-editor",
		"ClusterRole " + fullname + "-dispatchpolicy-viewer",
		"ClusterRole " + fullname + "-workercluster-editor",
		"ClusterRole " + fullname + "-workercluster-viewer",
		"ClusterRoleBinding " + fullname,
		"ConfigMap " + fullname + "-config",
		"CustomResourceDefinition dispatchpolicies.courier.dev",
		"CustomResourceDefinition workerclusters.courier.dev",
		"Deployment " + fullname,
		"MutatingWebhookConfiguration " + fullname + "-mutating-webhook-configuration",
		"Role " + fullname,
		"RoleBinding " + fullname,
		"Secret " + fullname + "-webhook-server-cert",
		"Service " + fullname + "-metrics",
		"Service " + fullname + "-webhook-service",
		"ServiceAccount " + fullname,
		"ValidatingWebhookConfiguration " + fullname + "-validating-webhook-configuration",
	}, more...)
	slices.Sort(ids)
	return ids
}

func without(ids []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(drop, id) })
}

var chartCases = map[string]chartCase{
	"default values, names from the release": {
		release: "prod", namespace: "batch",
		wantObjects:        objectsOf("prod-courier"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
	},
	"e2e values": {
		release: "courier", namespace: "courier-system",
		args:               []string{"--values", "e2e/courier-values.yaml"},
		wantObjects:        objectsOf("courier", "ClusterRole courier-extra", "ClusterRoleBinding courier-extra"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs", "jobs"},
		wantCertRules:      true,
		wantReplicas:       1,
	},
	"cert-manager": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "webhook.certManagement=CertManager", "--set", "metrics.serviceMonitor.enabled=true"},
		wantObjects: without(objectsOf("prod-courier", "Certificate prod-courier-serving-cert", "Certificate prod-courier-metrics-cert",
			"Issuer prod-courier-selfsigned-issuer", "ServiceMonitor prod-courier"),
			"Secret prod-courier-webhook-server-cert"),
		wantCertManagement: configv1alpha1.CertManagementExternal,
		wantJobResources:   []string{"trainjobs"},
		wantInjectCA:       "batch/prod-courier-serving-cert",
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			// The metrics certificate is mounted where the Configuration
			// reads it, and Prometheus verifies it against its CA.
			if got, want := in.config.Metrics.CertDir, "/tmp/k8s-metrics-server/serving-certs"; got != want {
				t.Errorf("Configuration metrics.certDir = %q, want %q", got, want)
			}
			if got := mountedSecret(in.deployment, in.config.Metrics.CertDir); got != "prod-courier-metrics-server-cert" {
				t.Errorf("metrics.certDir mounts Secret %q, want the metrics Certificate's prod-courier-metrics-server-cert", got)
			}
			want := map[string]any{"serverName": "prod-courier-metrics.batch.svc", "ca": map[string]any{"secret": map[string]any{"name": "prod-courier-metrics-server-cert", "key": "ca.crt"}}}
			if diff := cmp.Diff(want, serviceMonitorEndpoint(t, in.manifest)["tlsConfig"]); diff != "" {
				t.Errorf("ServiceMonitor tlsConfig (-want +got):\n%s", diff)
			}
		},
	},
	"plain HTTP metrics": {
		release: "prod", namespace: "batch",
		args:               []string{"--set", "metrics.secureServing=false", "--set", "metrics.serviceMonitor.enabled=true"},
		wantObjects:        without(objectsOf("prod-courier", "ServiceMonitor prod-courier"), "ClusterRole prod-courier-metrics-reader"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			if got := serviceMonitorEndpoint(t, in.manifest)["scheme"]; got != "http" {
				t.Errorf("ServiceMonitor scheme = %v, want http", got)
			}
		},
	},
	"a NetworkPolicy": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "networkPolicy.enabled=true",
			"--set-json", `networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`},
		wantObjects:        objectsOf("prod-courier", "NetworkPolicy prod-courier"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			np := as[networkingv1.NetworkPolicy](t, in.manifest, "NetworkPolicy")
			if diff := cmp.Diff(in.deployment.Spec.Selector, &np.Spec.PodSelector); diff != "" {
				t.Errorf("NetworkPolicy selects other pods than the Deployment (-deployment +policy):\n%s", diff)
			}
			tcp := corev1.ProtocolTCP
			port := func(name string) []networkingv1.NetworkPolicyPort {
				return []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString(name)), Protocol: &tcp}}
			}
			want := []networkingv1.NetworkPolicyIngressRule{
				{Ports: port("webhook")},
				{Ports: port("metrics"), From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}},
			}
			if diff := cmp.Diff(want, np.Spec.Ingress); diff != "" {
				t.Errorf("NetworkPolicy ingress (-want +got):\n%s", diff)
			}
			// Every port it admits is one the pod serves on.
			served := map[string]bool{}
			for _, p := range in.deployment.Spec.Template.Spec.Containers[0].Ports {
				served[p.Name] = true
			}
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					if !served[p.Port.StrVal] {
						t.Errorf("NetworkPolicy admits port %q, which the container does not name", p.Port.StrVal)
					}
				}
			}
		},
	},
	"user roles off": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "userRoles.enabled=false"},
		wantObjects: without(objectsOf("prod-courier"), "ClusterRole prod-courier-dispatchpolicy-editor", "ClusterRole prod-courier-dispatchpolicy-viewer",
			"ClusterRole prod-courier-workercluster-editor", "ClusterRole prod-courier-workercluster-viewer"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
	},
	"extra environment and flags": {
		release: "prod", namespace: "batch",
		args:               []string{"--set-json", `extraEnv=[{"name":"GOMEMLIMIT","value":"400MiB"}]`, "--set-json", `extraArgs=["--zap-log-level=4"]`},
		wantObjects:        objectsOf("prod-courier"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			c := in.deployment.Spec.Template.Spec.Containers[0]
			if diff := cmp.Diff([]string{"--config=/etc/courier/config.yaml", "--zap-log-level=4"}, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "400MiB"}}, c.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		},
	},
	"topology spread": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "replicas=2", "--set-json", `topologySpreadConstraints=[` +
			`{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"},` +
			`{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"team":"batch"}}}]`},
		wantObjects:        objectsOf("prod-courier"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantLeaderElect:    ptr.To(true),
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       2,
		check: func(t *testing.T, in *install) {
			want := []corev1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: in.deployment.Spec.Selector},
				{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "batch"}}},
			}
			if diff := cmp.Diff(want, in.deployment.Spec.Template.Spec.TopologySpreadConstraints); diff != "" {
				t.Errorf("topologySpreadConstraints (-want +got):\n%s", diff)
			}
		},
	},
	"dashboard and alerts": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "metrics.dashboard.enabled=true", "--set", "metrics.dashboard.namespace=grafana",
			"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.labels.release=kube-prometheus"},
		wantObjects:        objectsOf("prod-courier", "ConfigMap prod-courier-dashboard", "PrometheusRule prod-courier"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			root := repoRoot(t)
			dashboard := convert[corev1.ConfigMap](t, in.find("ConfigMap", "prod-courier-dashboard"))
			want, err := os.ReadFile(filepath.Join(root, "config/components/prometheus/courier-dashboard.json"))
			if err != nil {
				t.Fatal(err)
			}
			if dashboard.Namespace != "grafana" || dashboard.Labels["grafana_dashboard"] != "1" {
				t.Errorf("dashboard ConfigMap in %q with labels %v, want namespace grafana and grafana_dashboard=1", dashboard.Namespace, dashboard.Labels)
			}
			if dashboard.Data["courier-dashboard.json"] != string(want) {
				t.Errorf("the chart's dashboard differs from config/components/prometheus/courier-dashboard.json; run make manifests")
			}
			rule := in.find("PrometheusRule", "prod-courier")
			alerts, err := framework.ReadManifests(filepath.Join(root, "config/components/prometheus/courier-alerts.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(alerts[0].Object["spec"], rule.Object["spec"]); diff != "" {
				t.Errorf("the chart's alerts differ from config/components/prometheus/courier-alerts.yaml; run make manifests (-file +chart):\n%s", diff)
			}
			if got := rule.GetLabels()["release"]; got != "kube-prometheus" {
				t.Errorf("PrometheusRule label release = %q, want kube-prometheus", got)
			}
		},
	},
	"metrics readers": {
		release: "prod", namespace: "batch",
		args:               []string{"--set-json", `metrics.readers=[{"kind":"ServiceAccount","name":"prometheus-k8s","namespace":"monitoring"}]`},
		wantObjects:        objectsOf("prod-courier", "ClusterRoleBinding prod-courier-metrics-reader"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			binding := convert[rbacv1.ClusterRoleBinding](t, in.find("ClusterRoleBinding", "prod-courier-metrics-reader"))
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}}
			if diff := cmp.Diff(want, binding.Subjects); diff != "" {
				t.Errorf("metrics-reader binding subjects (-want +got):\n%s", diff)
			}
		},
	},
	"two replicas with a PodDisruptionBudget": {
		release: "courier-ha", namespace: "courier",
		args:               []string{"--set", "replicas=2", "--set", "podDisruptionBudget.enabled=true"},
		wantObjects:        objectsOf("courier-ha", "PodDisruptionBudget courier-ha"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantLeaderElect:    ptr.To(true),
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       2,
		wantPDB:            true,
	},
	"ServiceMonitor": {
		release: "prod", namespace: "batch",
		args:               []string{"--set", "metrics.serviceMonitor.enabled=true"},
		wantObjects:        objectsOf("prod-courier", "ServiceMonitor prod-courier"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
		check: func(t *testing.T, in *install) {
			want := map[string]any{
				"port": "metrics", "path": "/metrics", "interval": "30s", "scheme": "https",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
				"tlsConfig":       map[string]any{"insecureSkipVerify": true},
			}
			if diff := cmp.Diff(want, serviceMonitorEndpoint(t, in.manifest)); diff != "" {
				t.Errorf("ServiceMonitor endpoint (-want +got):\n%s", diff)
			}
		},
	},
	"CRDs managed elsewhere": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "crds.install=false"},
		wantObjects: without(objectsOf("prod-courier"),
			"CustomResourceDefinition dispatchpolicies.courier.dev", "CustomResourceDefinition workerclusters.courier.dev"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantJobResources:   []string{"trainjobs"},
		wantCertRules:      true,
		wantReplicas:       1,
	},
	"webhooks off": {
		release: "prod", namespace: "batch",
		args: []string{"--set", "webhook.enable=false"},
		wantObjects: without(objectsOf("prod-courier"),
			"MutatingWebhookConfiguration prod-courier-mutating-webhook-configuration",
			"ValidatingWebhookConfiguration prod-courier-validating-webhook-configuration",
			"Secret prod-courier-webhook-server-cert", "Service prod-courier-webhook-service"),
		wantCertManagement: configv1alpha1.CertManagementInternal,
		wantReplicas:       1,
	},
}

// TestChartLint lints the chart with every values variant.
func TestChartLint(t *testing.T) {
	root := repoRoot(t)
	for name, tc := range chartCases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", "charts/courier", "--namespace", tc.namespace}, tc.args...)
			if out, err := run(root, "helm", args...); err != nil {
				t.Errorf("helm lint %v: %v\n%s", tc.args, err, out)
			}
		})
	}
}

func TestChartRenders(t *testing.T) {
	root := repoRoot(t)
	for name, tc := range chartCases {
		t.Run(name, func(t *testing.T) {
			m, err := renderChart(root, tc.release, tc.namespace, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantObjects, m.ids()); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			in := checkInstall(t, m, tc.namespace)
			if got := in.config.Webhook.CertManagement; got != tc.wantCertManagement {
				t.Errorf("Configuration webhook.certManagement = %q, want %q", got, tc.wantCertManagement)
			}
			if tc.wantLeaderElect != nil && *in.config.LeaderElection.LeaderElect != *tc.wantLeaderElect {
				t.Errorf("Configuration leaderElection.leaderElect = %v, want %v", *in.config.LeaderElection.LeaderElect, *tc.wantLeaderElect)
			}
			if got := ptr.Deref(in.deployment.Spec.Replicas, 0); got != tc.wantReplicas {
				t.Errorf("Deployment replicas = %d, want %d", got, tc.wantReplicas)
			}
			if tc.check != nil {
				tc.check(t, in)
			}
			if tc.wantPDB {
				pdb := as[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget")
				if diff := cmp.Diff(in.deployment.Spec.Selector, pdb.Spec.Selector); diff != "" {
					t.Errorf("PodDisruptionBudget selects other pods than the Deployment (-deployment +pdb):\n%s", diff)
				}
			}
			if !*in.config.Webhook.Enable {
				return
			}
			mutating := as[admissionv1.MutatingWebhookConfiguration](t, m, "MutatingWebhookConfiguration")
			var resources []string
			for _, rule := range mutating.Webhooks[0].Rules {
				resources = append(resources, rule.Resources...)
			}
			if diff := cmp.Diff(tc.wantJobResources, resources); diff != "" {
				t.Errorf("resources of the managedBy webhook (-want +got):\n%s", diff)
			}
			if got := mutating.Annotations["cert-manager.io/inject-ca-from"]; got != tc.wantInjectCA {
				t.Errorf("inject-ca-from = %q, want %q", got, tc.wantInjectCA)
			}
			if got := grantsCertWrites(t, m); got != tc.wantCertRules {
				t.Errorf("RBAC grants certificate writes: %v, want %v", got, tc.wantCertRules)
			}
		})
	}
}

// grantsCertWrites reports whether any role lets Courier write webhook
// configurations or create and update Secrets.
func grantsCertWrites(t *testing.T, m manifest) bool {
	var rules []rbacv1.PolicyRule
	for _, obj := range append(m.ofKind("ClusterRole"), m.ofKind("Role")...) {
		rules = append(rules, convert[rbacv1.ClusterRole](t, obj).Rules...)
	}
	for _, r := range rules {
		webhooks := slices.Contains(r.APIGroups, "admissionregistration.k8s.io") && slices.Contains(r.Verbs, "update")
		secrets := slices.Contains(r.Resources, "secrets") && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "update"))
		if webhooks || secrets {
			return true
		}
	}
	return false
}

func TestChartConfigChecksum(t *testing.T) {
	root := repoRoot(t)
	checksum := func(args ...string) string {
		t.Helper()
		m, err := renderChart(root, "courier", "courier-system", args...)
		if err != nil {
			t.Fatal(err)
		}
		sum := as[unstructured.Unstructured](t, m, "Deployment")
		got, _, _ := unstructured.NestedString(sum.Object, "spec", "template", "metadata", "annotations", "checksum/config")
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got) {
			t.Fatalf("checksum/config = %q, want a sha256", got)
		}
		return got
	}
	base := checksum()
	if again := checksum(); again != base {
		t.Errorf("the same values give another checksum: %s, then %s", base, again)
	}
	if changed := checksum("--set", "configuration.origin=other"); changed == base {
		t.Errorf("a changed Configuration keeps checksum %s: the pods would not roll", base)
	}
}

// TestChartCRDs checks that the chart's CRDs are those `make manifests`
// generates, kept on uninstall.
func TestChartCRDs(t *testing.T) {
	root := repoRoot(t)
	m, err := renderChart(root, "courier", "courier-system")
	if err != nil {
		t.Fatal(err)
	}
	generated, err := framework.ReadCRDs([]string{root + "/config/crd/bases"})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range generated {
		obj := m.find("CustomResourceDefinition", crd.Name)
		if obj == nil {
			t.Errorf("the chart lacks CRD %s", crd.Name)
			continue
		}
		rendered := convert[apiextensionsv1.CustomResourceDefinition](t, obj)
		if diff := cmp.Diff(crd.Spec, rendered.Spec); diff != "" {
			t.Errorf("CRD %s differs from config/crd/bases; run make manifests (-generated +chart):\n%s", crd.Name, diff)
		}
		if got := rendered.Annotations["helm.sh/resource-policy"]; got != "keep" {
			t.Errorf("CRD %s has helm.sh/resource-policy %q, want keep", crd.Name, got)
		}
	}
}

// serviceMonitorEndpoint is the only endpoint of the only ServiceMonitor.
func serviceMonitorEndpoint(t *testing.T, m manifest) map[string]any {
	t.Helper()
	sm := as[unstructured.Unstructured](t, m, "ServiceMonitor")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor has %d endpoints, want 1", len(endpoints))
	}
	return endpoints[0].(map[string]any)
}

// mountedSecret is the Secret the Deployment's container mounts at path.
func mountedSecret(d *appsv1.Deployment, path string) string {
	volumes := map[string]string{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			volumes[v.Name] = v.Secret.SecretName
		}
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == path {
				return volumes[m.Name]
			}
		}
	}
	return ""
}
