package manifests

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/courierdev/courier/test/integration/framework"
)

// workerChart is the chart that installs config/worker with Helm.
const workerChart = "charts/courier-worker"

// workerChartCase is one values variant of the worker chart, and the
// config/worker install it must equal.
type workerChartCase struct {
	namespace string
	args      []string
	// want builds the objects config/worker installs for the same choice,
	// in courier-system, as a platform engineer would apply them.
	want func(t *testing.T, root string) manifest
	// jobNamespaces are those the namespaced RBAC binds, each with a copy
	// of rbac-namespaced.yaml's example RoleBinding courier-worker-write.
	jobNamespaces []string
	// wantNamespace is whether the chart renders the Namespace.
	wantNamespace bool
}

// workerFiles reads files of config/worker, as applied with kubectl -f.
func workerFiles(files ...string) func(t *testing.T, root string) manifest {
	return func(t *testing.T, root string) manifest {
		t.Helper()
		var m manifest
		for _, file := range files {
			objs, err := framework.ReadManifests(filepath.Join(root, "config/worker", file))
			if err != nil {
				t.Fatal(err)
			}
			m = append(m, objs...)
		}
		return m
	}
}

var workerChartCases = map[string]workerChartCase{
	"default values": {
		namespace: kustomizeNamespace,
		want: func(t *testing.T, root string) manifest {
			t.Helper()
			m, err := buildKustomization(root, "config/worker")
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	"namespaced RBAC": {
		namespace:     kustomizeNamespace,
		args:          []string{"--set", "rbac.scope=Namespaced", "--set-json", `rbac.jobNamespaces=["team-a","team-b"]`},
		want:          workerFiles("rbac-namespaced.yaml", "fence.yaml"),
		jobNamespaces: []string{"team-a", "team-b"},
	},
	"fence disabled": {
		namespace: kustomizeNamespace,
		args:      []string{"--set", "fence.enabled=false"},
		want:      workerFiles("rbac.yaml"),
	},
	"with manager access": {
		namespace: kustomizeNamespace,
		args:      []string{"--set", "fence.manager.kubeconfigSecret=courier-fence-manager", "--set", "fence.manager.workerCluster=worker-1"},
		want: func(t *testing.T, root string) manifest {
			t.Helper()
			m, err := buildWorkerWithManager(root, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	"another namespace, created by the chart": {
		namespace:     "batch-system",
		args:          []string{"--set", "namespace=batch-system", "--set", "createNamespace=true"},
		want:          workerFiles("rbac.yaml", "fence.yaml"),
		wantNamespace: true,
	},
}

// renderWorkerChart renders the worker chart with extra helm arguments.
func renderWorkerChart(root string, args ...string) (manifest, error) {
	out, err := run(root, "helm", append([]string{"template", "courier-worker", workerChart, "--namespace", "courier-system"}, args...)...)
	if err != nil {
		return nil, err
	}
	objs, err := framework.DecodeManifests(out)
	return manifest(objs), err
}

func TestWorkerChartLint(t *testing.T) {
	root := repoRoot(t)
	for name, tc := range workerChartCases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", workerChart, "--namespace", "courier-system"}, tc.args...)
			if out, err := run(root, "helm", args...); err != nil {
				t.Errorf("helm lint %v: %v\n%s", tc.args, err, out)
			}
		})
	}
}

// TestWorkerChartRendersConfigWorker renders each variant and requires
// config/worker's objects, the same down to every rule, subject and pod
// field, in the chart's namespace: only the chart's labels and the image
// differ.
func TestWorkerChartRendersConfigWorker(t *testing.T) {
	root := repoRoot(t)
	image := "courier:" + workerChartAppVersion(t, root)
	for name, tc := range workerChartCases {
		t.Run(name, func(t *testing.T) {
			got, err := renderWorkerChart(root, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			want := expectedWorkerObjects(t, tc.want(t, root), tc, image)
			if diff := cmp.Diff(want.ids(), got.ids()); diff != "" {
				t.Errorf("rendered objects (-config/worker +chart):\n%s", diff)
			}
			for _, obj := range got {
				labels := obj.GetLabels()
				if labels["app.kubernetes.io/managed-by"] != "Helm" || labels["app.kubernetes.io/instance"] != "courier-worker" {
					t.Errorf("%s %s lacks the chart's labels: %v", obj.GetKind(), obj.GetName(), labels)
				}
				wantObj := want.findIn(obj.GetKind(), obj.GetNamespace(), obj.GetName())
				if wantObj == nil {
					continue
				}
				if diff := cmp.Diff(wantObj.Object, withoutChartLabels(obj).Object); diff != "" {
					t.Errorf("%s %s/%s differs from config/worker's (-config/worker +chart):\n%s", obj.GetKind(), obj.GetNamespace(), obj.GetName(), diff)
				}
			}
			checkWorkerInstall(t, got)
		})
	}
}

// expectedWorkerObjects is config/worker's install as the chart must
// render it: in tc's namespace, the example RoleBinding once per job
// namespace, the Namespace only when the chart creates it, and the
// chart's image.
func expectedWorkerObjects(t *testing.T, m manifest, tc workerChartCase, image string) manifest {
	t.Helper()
	var out manifest
	for _, obj := range m {
		obj = obj.DeepCopy()
		switch {
		case obj.GetKind() == "Namespace":
			if !tc.wantNamespace {
				continue
			}
			obj.SetName(tc.namespace)
		case obj.GetKind() == "RoleBinding" && obj.GetName() == "courier-worker-write":
			for _, ns := range tc.jobNamespaces {
				binding := inNamespace(t, obj, tc.namespace)
				binding.SetNamespace(ns)
				out = append(out, binding)
			}
			continue
		default:
			obj = inNamespace(t, obj, tc.namespace)
		}
		if obj.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			c := containers[0].(map[string]any)
			if c["image"] != "courier" {
				t.Fatalf("config/worker's fence runs image %v, want courier, which the chart replaces", c["image"])
			}
			c["image"], c["imagePullPolicy"] = image, "IfNotPresent"
			if err := unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, obj)
	}
	return out
}

// inNamespace moves an object of config/worker, and the ServiceAccounts
// it binds, from courier-system into namespace.
func inNamespace(t *testing.T, obj *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	t.Helper()
	obj = obj.DeepCopy()
	if obj.GetNamespace() != "" {
		obj.SetNamespace(namespace)
	}
	subjects, found, _ := unstructured.NestedSlice(obj.Object, "subjects")
	if !found {
		return obj
	}
	for _, s := range subjects {
		if s := s.(map[string]any); s["kind"] == "ServiceAccount" {
			if s["namespace"] != kustomizeNamespace {
				t.Fatalf("%s %s binds a ServiceAccount in %v, not courier-system", obj.GetKind(), obj.GetName(), s["namespace"])
			}
			s["namespace"] = namespace
		}
	}
	if err := unstructured.SetNestedSlice(obj.Object, subjects, "subjects"); err != nil {
		t.Fatal(err)
	}
	return obj
}

// chartLabels are the labels the chart adds over config/worker's.
var chartLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

func withoutChartLabels(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	for _, key := range chartLabels {
		delete(labels, key)
	}
	// The chart names itself on objects config/worker leaves unlabelled.
	if labels["app.kubernetes.io/name"] == "courier-worker" {
		delete(labels, "app.kubernetes.io/name")
	}
	if len(labels) == 0 {
		labels = nil
	}
	obj.SetLabels(labels)
	return obj
}

func (m manifest) findIn(kind, namespace, name string) *unstructured.Unstructured {
	for _, obj := range m {
		if obj.GetKind() == kind && obj.GetNamespace() == namespace && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

// checkWorkerInstall asserts what any worker install must hold: every
// binding's role and ServiceAccount rendered, Leases granted only in a
// namespace, and the fence, if any, a hardened pod running /courier-fence
// as its own ServiceAccount.
func checkWorkerInstall(t *testing.T, m manifest) {
	t.Helper()
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, obj := range m.ofKind(kind) {
			binding := convert[rbacv1.RoleBinding](t, obj)
			if m.find(binding.RoleRef.Kind, binding.RoleRef.Name) == nil {
				t.Errorf("%s %s binds %s %s, which is not rendered", kind, binding.Name, binding.RoleRef.Kind, binding.RoleRef.Name)
			}
			for _, s := range binding.Subjects {
				if m.findIn("ServiceAccount", s.Namespace, s.Name) == nil {
					t.Errorf("%s %s binds ServiceAccount %s/%s, which is not rendered", kind, binding.Name, s.Namespace, s.Name)
				}
			}
		}
	}
	for _, obj := range m.ofKind("ClusterRole") {
		for _, rule := range convert[rbacv1.ClusterRole](t, obj).Rules {
			if slices.Contains(rule.Resources, "leases") {
				t.Errorf("ClusterRole %s grants leases cluster-wide; they belong in a Role in the fence's namespace", obj.GetName())
			}
		}
	}
	if len(m.ofKind("Deployment")) == 0 {
		return
	}
	d := as[appsv1.Deployment](t, m, "Deployment")
	checkPodSecurity(t, d)
	pod := d.Spec.Template.Spec
	if diff := cmp.Diff([]string{"/courier-fence"}, pod.Containers[0].Command); diff != "" {
		t.Errorf("fence command (-want +got):\n%s", diff)
	}
	if m.findIn("ServiceAccount", d.Namespace, pod.ServiceAccountName) == nil || pod.ServiceAccountName != "courier-fence" {
		t.Errorf("the fence runs as ServiceAccount %q, want courier-fence, rendered in %s", pod.ServiceAccountName, d.Namespace)
	}
}

func workerChartAppVersion(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, workerChart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ AppVersion string }
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	return meta.AppVersion
}

// TestWorkerChartValues checks the values the chart sets over
// config/worker's fence: its flags, the pod's scheduling, and the image,
// which is the courier chart's.
func TestWorkerChartValues(t *testing.T) {
	root := repoRoot(t)
	m, err := renderWorkerChart(root,
		"--set", "image.repository=registry.example/courier", "--set", "image.tag=v9.9.9",
		"--set", "fence.pollInterval=500ms", "--set-json", `fence.extraArgs=["--zap-log-level=4"]`,
		"--set", "fence.manager.kubeconfigSecret=fence-kubeconfig", "--set", "fence.manager.workerCluster=gpu-east",
		"--set", "fence.priorityClassName=system-cluster-critical",
		"--set-json", `fence.nodeSelector={"node-role.kubernetes.io/control-plane":""}`,
		"--set-json", `fence.tolerations=[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}]`,
		"--set-json", `fence.resources={"requests":{"cpu":"20m","memory":"64Mi"},"limits":{"memory":"128Mi"}}`)
	if err != nil {
		t.Fatal(err)
	}
	d := as[appsv1.Deployment](t, m, "Deployment")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	wantArgs := []string{"--namespace=$(POD_NAMESPACE)", "--identity=$(POD_NAME)", "--poll-interval=500ms",
		"--manager-kubeconfig=/etc/courier-fence/manager/kubeconfig", "--worker-cluster=gpu-east", "--zap-log-level=4"}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("fence args (-want +got):\n%s", diff)
	}
	if got := mountedSecret(d, "/etc/courier-fence/manager"); got != "fence-kubeconfig" {
		t.Errorf("the manager kubeconfig comes from Secret %q, want fence-kubeconfig", got)
	}
	got := map[string]any{
		"priorityClassName": pod.PriorityClassName, "nodeSelector": pod.NodeSelector, "tolerations": len(pod.Tolerations),
		"requests": c.Resources.Requests.Memory().String(), "limits": c.Resources.Limits.Memory().String(),
	}
	want := map[string]any{
		"priorityClassName": "system-cluster-critical", "nodeSelector": map[string]string{"node-role.kubernetes.io/control-plane": ""}, "tolerations": 1,
		"requests": "64Mi", "limits": "128Mi",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fence pod (-want +got):\n%s", diff)
	}

	// Both charts run one image: the worker chart's default is the courier
	// chart's, and the same values move both.
	for _, args := range [][]string{nil, {"--set", "image.repository=registry.example/courier", "--set", "image.tag=v9.9.9"}} {
		worker, err := renderWorkerChart(root, args...)
		if err != nil {
			t.Fatal(err)
		}
		manager, err := renderChart(root, "courier", "courier-system", args...)
		if err != nil {
			t.Fatal(err)
		}
		fenceImage := as[appsv1.Deployment](t, worker, "Deployment").Spec.Template.Spec.Containers[0].Image
		courierImage := as[appsv1.Deployment](t, manager, "Deployment").Spec.Template.Spec.Containers[0].Image
		if fenceImage != courierImage {
			t.Errorf("with %v the fence runs %q and Courier %q; want one image", args, fenceImage, courierImage)
		}
	}
}

// TestWorkerChartRefuses checks the values the chart refuses, with a
// message that says why.
func TestWorkerChartRefuses(t *testing.T) {
	root := repoRoot(t)
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"namespaced RBAC without job namespaces": {
			args:    []string{"--set", "rbac.scope=Namespaced"},
			wantErr: "rbac.scope Namespaced needs rbac.jobNamespaces",
		},
		"job namespaces with cluster-wide RBAC": {
			args:    []string{"--set-json", `rbac.jobNamespaces=["team-a"]`},
			wantErr: "rbac.jobNamespaces is for rbac.scope Namespaced",
		},
		"a manager Secret without the WorkerCluster": {
			args:    []string{"--set", "fence.manager.kubeconfigSecret=courier-fence-manager"},
			wantErr: "fence.manager.kubeconfigSecret and fence.manager.workerCluster go together",
		},
		"a poll interval above the fence's 1s": {
			args:    []string{"--set", "fence.pollInterval=2s"},
			wantErr: "/fence/pollInterval",
		},
		"a value the chart does not take": {
			args:    []string{"--set", "fence.replicas=2"},
			wantErr: "additional properties 'replicas' not allowed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := renderWorkerChart(root, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("helm template %v: error %v, want one containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

// TestWorkerChartFilesAreConfigWorker requires the chart's files/ to be
// config/worker's files, byte for byte, so that the two installs cannot
// drift: `make manifests` copies them.
func TestWorkerChartFilesAreConfigWorker(t *testing.T) {
	root := repoRoot(t)
	entries, err := os.ReadDir(filepath.Join(root, workerChart, "files"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		chart, err := os.ReadFile(filepath.Join(root, workerChart, "files", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		config, err := os.ReadFile(filepath.Join(root, "config/worker", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(chart, config) {
			t.Errorf("%s/files/%s differs from config/worker/%s; run make manifests", workerChart, e.Name(), e.Name())
		}
	}
	if diff := cmp.Diff([]string{"fence.yaml", "rbac-namespaced.yaml", "rbac.yaml"}, names); diff != "" {
		t.Errorf("%s/files (-want +got):\n%s", workerChart, diff)
	}
}
