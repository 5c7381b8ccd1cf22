package manifests

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

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
		"ClusterRole courier-manager-role",
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
		"worker": {dir: "config/worker", want: []string{
			"ClusterRole courier-fence", "ClusterRole courier-worker",
			"ClusterRoleBinding courier-fence", "ClusterRoleBinding courier-worker",
			"Deployment courier-fence", "Namespace courier-system",
			"Role courier-fence", "Role courier-heartbeat",
			"RoleBinding courier-fence", "RoleBinding courier-heartbeat",
			"Secret courier-token", "ServiceAccount courier", "ServiceAccount courier-fence",
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
