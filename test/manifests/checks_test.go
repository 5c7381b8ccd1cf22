package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/config"
)

// install is a rendered install with the objects every check looks at.
type install struct {
	manifest
	namespace  string
	deployment *appsv1.Deployment
	config     *configv1alpha1.Configuration
}

// checkInstall asserts what every way of installing Courier must hold, and
// returns the install for more checks: a hardened pod; Secrets and Leases
// granted in Courier's namespace only; a Configuration that loads and names
// the webhook objects the install created; webhooks as the contract says.
func checkInstall(t *testing.T, m manifest, namespace string) *install {
	t.Helper()
	in := &install{manifest: m, namespace: namespace, deployment: as[appsv1.Deployment](t, m, "Deployment")}
	checkPodSecurity(t, in.deployment)
	checkMemoryLimit(t, in.deployment)
	in.config = loadConfiguration(t, in)
	if got := in.config.Namespace; got != namespace {
		t.Errorf("Configuration namespace = %q, want the install namespace %q", got, namespace)
	}
	checkRBAC(t, in)
	checkMetrics(t, in)
	if *in.config.Webhook.Enable {
		checkWebhooks(t, in)
	}
	return in
}

func checkPodSecurity(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec.SecurityContext
	if pod == nil || !ptr.Deref(pod.RunAsNonRoot, false) || pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and seccompProfile RuntimeDefault", pod)
	}
	want := &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if diff := cmp.Diff(want, c.SecurityContext); diff != "" {
			t.Errorf("container %s securityContext (-want +got):\n%s", c.Name, diff)
		}
	}
}

// checkMemoryLimit requires a memory limit, which Courier's Go memory
// limit follows (pkg/memlimit); without one the collector never works
// harder before the kernel kills the process.
func checkMemoryLimit(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || limit.IsZero() {
			t.Errorf("container %s has no memory limit: %v", c.Name, c.Resources)
		}
	}
}

// loadConfiguration loads, as Courier does, the config.yaml of the
// ConfigMap the Deployment mounts.
func loadConfiguration(t *testing.T, in *install) *configv1alpha1.Configuration {
	t.Helper()
	var name string
	for _, v := range in.deployment.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			name = v.ConfigMap.Name
		}
	}
	cm := in.find("ConfigMap", name)
	if cm == nil {
		t.Fatalf("the Deployment mounts ConfigMap %q, which is not rendered: %v", name, in.ids())
	}
	data := convert[corev1.ConfigMap](t, cm).Data["config.yaml"]
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	// As the kubelet would set it from the downward API.
	t.Setenv(configv1alpha1.NamespaceEnv, "")
	for _, c := range in.deployment.Spec.Template.Spec.Containers {
		for _, env := range c.Env {
			if env.Name == configv1alpha1.NamespaceEnv && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
				t.Setenv(configv1alpha1.NamespaceEnv, in.deployment.Namespace)
			}
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("Courier refuses the rendered Configuration: %v\n%s", err, data)
	}
	return cfg
}

// checkRBAC asserts the split: Secrets and Leases only through a Role in
// Courier's namespace, every role bound to the Deployment's
// ServiceAccount, and the webhook objects' names in the rules matching
// those the Configuration names.
func checkRBAC(t *testing.T, in *install) {
	t.Helper()
	sa := in.deployment.Spec.Template.Spec.ServiceAccountName
	if in.find("ServiceAccount", sa) == nil {
		t.Errorf("the Deployment runs as ServiceAccount %q, which is not rendered", sa)
	}
	for _, obj := range in.ofKind("ClusterRole") {
		for _, rule := range convert[rbacv1.ClusterRole](t, obj).Rules {
			if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "leases") {
				t.Errorf("ClusterRole %s grants %v cluster-wide; Secrets and Leases belong in the namespaced Role", obj.GetName(), rule.Resources)
			}
			for _, name := range rule.ResourceNames {
				if name != in.config.Webhook.MutatingConfigurationName && name != in.config.Webhook.ValidatingConfigurationName {
					t.Errorf("ClusterRole %s names %q, not a webhook configuration the Configuration names", obj.GetName(), name)
				}
			}
		}
	}
	checkUserRoles(t, in)
	role := as[rbacv1.Role](t, in.manifest, "Role")
	if role.Namespace != in.namespace {
		t.Errorf("Role %s is in namespace %q, want %q", role.Name, role.Namespace, in.namespace)
	}
	granted := map[string][]string{}
	for _, rule := range role.Rules {
		for _, r := range rule.Resources {
			if len(rule.ResourceNames) == 0 {
				granted[r] = append(granted[r], rule.Verbs...)
			}
		}
	}
	for resource, verbs := range map[string][]string{"secrets": {"get", "list", "watch"}, "leases": {"get", "create", "update"}} {
		for _, v := range verbs {
			if !slices.Contains(granted[resource], v) {
				t.Errorf("Role %s does not grant %s on %s: %v", role.Name, v, resource, role.Rules)
			}
		}
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, obj := range in.ofKind(kind) {
			binding := convert[rbacv1.RoleBinding](t, obj)
			role := in.find(binding.RoleRef.Kind, binding.RoleRef.Name)
			if role == nil {
				t.Errorf("%s %s binds %s %s, which is not rendered", kind, binding.Name, binding.RoleRef.Kind, binding.RoleRef.Name)
				continue
			}
			// Scrapers, not Courier, read the metrics.
			if readsMetricsOnly(convert[rbacv1.ClusterRole](t, role)) {
				continue
			}
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: in.namespace}}
			if diff := cmp.Diff(want, binding.Subjects); diff != "" {
				t.Errorf("%s %s subjects (-want +got):\n%s", kind, binding.Name, diff)
			}
		}
	}
}

// checkUserRoles asserts what the ClusterRoles aggregated into the
// standard roles grant: Courier's APIs only, both kinds to view and to
// edit, and nothing but reads to view.
func checkUserRoles(t *testing.T, in *install) {
	t.Helper()
	const aggregate = "rbac.authorization.k8s.io/aggregate-to-"
	granted := map[string][]string{}
	for _, obj := range in.ofKind("ClusterRole") {
		role := convert[rbacv1.ClusterRole](t, obj)
		for _, to := range []string{"view", "edit", "admin"} {
			if role.Labels[aggregate+to] != "true" {
				continue
			}
			for _, rule := range role.Rules {
				if !slices.Equal(rule.APIGroups, []string{"courier.dev"}) {
					t.Errorf("ClusterRole %s, aggregated into %s, grants %v outside courier.dev", role.Name, to, rule.APIGroups)
				}
				if to == "view" && slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					t.Errorf("ClusterRole %s, aggregated into view, grants %v", role.Name, rule.Verbs)
				}
				for _, r := range rule.Resources {
					granted[to+" "+r] = append(granted[to+" "+r], rule.Verbs...)
				}
			}
		}
	}
	if len(granted) == 0 {
		return
	}
	for _, kind := range []string{"workerclusters", "dispatchpolicies"} {
		for to, verbs := range map[string][]string{"view": {"get", "list", "watch"}, "edit": {"create", "update", "patch", "delete"}, "admin": {"create", "delete"}} {
			for _, v := range verbs {
				if !slices.Contains(granted[to+" "+kind], v) {
					t.Errorf("no ClusterRole aggregated into %s grants %s on %s", to, v, kind)
				}
			}
		}
	}
}

// checkMetrics asserts that metrics are served as the Configuration says:
// over HTTPS, Courier may have the API server review tokens and access,
// and a ClusterRole lets scrapers get /metrics; over plain HTTP neither
// is granted. The container's metrics port is the one Courier binds.
func checkMetrics(t *testing.T, in *install) {
	t.Helper()
	secure := *in.config.Metrics.SecureServing
	var reviews, reader bool
	for _, obj := range in.ofKind("ClusterRole") {
		role := convert[rbacv1.ClusterRole](t, obj)
		reader = reader || readsMetricsOnly(role)
		for _, rule := range role.Rules {
			if (slices.Contains(rule.Resources, "tokenreviews") || slices.Contains(rule.Resources, "subjectaccessreviews")) && slices.Contains(rule.Verbs, "create") {
				reviews = true
			}
		}
	}
	if reviews != secure || reader != secure {
		t.Errorf("metrics secureServing %v, but token and access reviews granted: %v, a metrics-reader ClusterRole: %v", secure, reviews, reader)
	}
	if in.config.Metrics.BindAddress == "0" {
		return
	}
	_, port, _ := strings.Cut(in.config.Metrics.BindAddress, ":")
	var found bool
	for _, c := range in.deployment.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			found = found || (p.Name == "metrics" && strconv.Itoa(int(p.ContainerPort)) == port)
		}
	}
	if !found {
		t.Errorf("no container port named metrics is %s, the port of metrics.bindAddress %q", port, in.config.Metrics.BindAddress)
	}
}

// readsMetricsOnly is whether a role grants nothing but get on /metrics.
func readsMetricsOnly(role *rbacv1.ClusterRole) bool {
	want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	return cmp.Equal(want, role.Rules)
}

// checkWebhooks asserts the webhook contract: paths, failure policy, and
// the selectors that keep Courier out of unrelated workloads' way; and that
// the objects are those the Configuration names.
func checkWebhooks(t *testing.T, in *install) {
	t.Helper()
	wh := in.config.Webhook
	svc := in.find("Service", wh.ServiceName)
	if svc == nil {
		t.Fatalf("the Configuration names webhook Service %q, which is not rendered: %v", wh.ServiceName, in.ids())
	}
	wantPorts := []corev1.ServicePort{{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, convert[corev1.Service](t, svc).Spec.Ports); diff != "" {
		t.Errorf("webhook Service ports (-want +got):\n%s", diff)
	}
	var mounted bool
	for _, v := range in.deployment.Spec.Template.Spec.Volumes {
		mounted = mounted || (v.Secret != nil && v.Secret.SecretName == wh.SecretName)
	}
	if !mounted {
		t.Errorf("the Deployment does not mount the certificate Secret %q", wh.SecretName)
	}
	jobSelectors := selectors{
		Object:    &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kueue.x-k8s.io/queue-name", Operator: metav1.LabelSelectorOpExists}}},
		Namespace: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", in.namespace}}}},
	}
	want := map[string]webhook{
		"jobs.courier.dev":             {Path: "/mutate-job", Selectors: jobSelectors},
		"trainjobs.courier.dev":        {Path: "/validate-trainjob", Selectors: jobSelectors},
		"dispatchpolicies.courier.dev": {Path: "/validate-dispatchpolicy"},
	}
	got := map[string]webhook{}
	mutating := in.find("MutatingWebhookConfiguration", wh.MutatingConfigurationName)
	validating := in.find("ValidatingWebhookConfiguration", wh.ValidatingConfigurationName)
	if mutating == nil || validating == nil {
		t.Fatalf("the Configuration names webhook configurations %q and %q; rendered: %v", wh.MutatingConfigurationName, wh.ValidatingConfigurationName, in.ids())
	}
	for _, w := range convert[admissionv1.MutatingWebhookConfiguration](t, mutating).Webhooks {
		got[w.Name] = describeWebhook(w.ClientConfig, w.FailurePolicy, w.SideEffects, w.AdmissionReviewVersions, w.ObjectSelector, w.NamespaceSelector)
	}
	for _, w := range convert[admissionv1.ValidatingWebhookConfiguration](t, validating).Webhooks {
		got[w.Name] = describeWebhook(w.ClientConfig, w.FailurePolicy, w.SideEffects, w.AdmissionReviewVersions, w.ObjectSelector, w.NamespaceSelector)
	}
	for name, w := range want {
		w.Service = wh.ServiceName + "." + in.namespace + ":443"
		w.Policy = "Fail/None/[v1]"
		if name == "trainjobs.courier.dev" {
			// It sees Kueue's updates too: Courier down must not hold them.
			w.Policy = "Ignore/None/[v1]"
		}
		want[name] = w
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
}

// webhook is what the contract fixes of one webhook entry.
type webhook struct {
	Service, Path, Policy string
	Selectors             selectors
}

type selectors struct {
	Object, Namespace *metav1.LabelSelector
}

func describeWebhook(cc admissionv1.WebhookClientConfig, fp *admissionv1.FailurePolicyType, se *admissionv1.SideEffectClass, versions []string, object, namespace *metav1.LabelSelector) webhook {
	w := webhook{
		Policy:    string(ptr.Deref(fp, "")) + "/" + string(ptr.Deref(se, "")) + "/[" + strings.Join(versions, " ") + "]",
		Selectors: selectors{Object: object, Namespace: namespace},
	}
	if s := cc.Service; s != nil {
		w.Service, w.Path = s.Name+"."+s.Namespace+":"+strconv.Itoa(int(ptr.Deref(s.Port, 0))), ptr.Deref(s.Path, "")
	}
	return w
}
