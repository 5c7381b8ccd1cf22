package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	courier "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	"github.com/courierdev/courier/test/integration/framework"
)

// Names of what Configure creates.
const (
	Namespace        = "team-a"
	CourierNamespace = "courier-system"
	// workerServiceAccount is Courier's identity on workers, from
	// config/worker/rbac.yaml.
	workerServiceAccount = "courier"
	LocalQueue           = "lq"
	ClusterQueue         = "cq"
	CheckName            = "courier"
	PolicyName           = "all-workers"
)

// Configure sets the clusters up for dispatch: on every cluster the
// torch-distributed ClusterTrainingRuntime, a ResourceFlavor, ClusterQueue
// "cq" and LocalQueue "lq" in namespace team-a; on the manager, Courier's
// AdmissionCheck on the ClusterQueue, a DispatchPolicy over every worker,
// and a WorkerCluster per worker. Courier reaches each worker as the
// ServiceAccount of config/worker/rbac.yaml, as a real deployment does.
func (e *Env) Configure(ctx context.Context) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	mods, err := framework.ModuleDirs(root, "github.com/kubeflow/trainer/v2")
	if err != nil {
		return err
	}
	runtime := &trainer.ClusterTrainingRuntime{}
	data, err := os.ReadFile(filepath.Join(mods["github.com/kubeflow/trainer/v2"], "manifests/base/runtimes/torch_distributed.yaml"))
	if err != nil {
		return fmt.Errorf("reading the torch-distributed runtime: %w", err)
	}
	if err := yaml.Unmarshal(data, runtime); err != nil {
		return fmt.Errorf("decoding the torch-distributed runtime: %w", err)
	}
	workerKubeconfigs := map[string][]byte{}
	for _, w := range e.Workers {
		if workerKubeconfigs[w], err = e.grantWorkerAccess(ctx, root, w); err != nil {
			return err
		}
	}
	for _, name := range append([]string{e.Manager}, e.Workers...) {
		c, err := e.Client(name)
		if err != nil {
			return err
		}
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
			runtime.DeepCopy(),
			&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			clusterQueue(name == e.Manager, len(e.Workers)*e.GPUNodes*e.GPUsPerNode),
			&kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: LocalQueue, Namespace: Namespace},
				Spec: kueue.LocalQueueSpec{ClusterQueue: ClusterQueue}},
		}
		if name == e.Manager {
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CourierNamespace}})
			for _, w := range e.Workers {
				objs = append(objs,
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: w + "-kubeconfig", Namespace: CourierNamespace},
						Data: map[string][]byte{"kubeconfig": workerKubeconfigs[w]}},
					couriertesting.MakeWorkerCluster(w).Secret(w+"-kubeconfig", "kubeconfig").Obj())
			}
			objs = append(objs,
				&courier.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
					Spec: courier.DispatchPolicySpec{Clusters: e.Workers}},
				framework.AdmissionCheck(CheckName, PolicyName))
		}
		for _, obj := range objs {
			if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), name, err)
			}
		}
	}
	return nil
}

// workerRBAC is Courier's access on a worker: its identity, and a role for
// the external frameworks the e2e configuration lists.
var workerRBAC = []string{framework.WorkerRBAC, "e2e/worker-rbac.yaml"}

// grantWorkerAccess applies workerRBAC to a worker and returns a kubeconfig
// with the ServiceAccount's token.
func (e *Env) grantWorkerAccess(ctx context.Context, root, worker string) ([]byte, error) {
	c, err := e.Client(worker)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, f := range workerRBAC {
		fileObjs, err := framework.ReadManifests(filepath.Join(root, f))
		if err != nil {
			return nil, fmt.Errorf("reading Courier's worker RBAC %s: %w", f, err)
		}
		objs = append(objs, fileObjs...)
	}
	if err := framework.Apply(ctx, c, objs, fieldOwner); err != nil {
		return nil, fmt.Errorf("granting Courier access to %s: %w", worker, err)
	}
	base, err := os.ReadFile(e.courierKubeconfig(worker))
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig of %s: %w", worker, err)
	}
	if addr, ok := e.courierRoutes[worker]; ok {
		if base, err = WithServer(base, addr); err != nil {
			return nil, err
		}
	}
	return serviceAccountKubeconfig(ctx, c, base, CourierNamespace, workerServiceAccount)
}

// clusterQueue covers CPU, memory and GPUs. The manager's runs Courier's
// check and holds the quota of every worker together.
func clusterQueue(manager bool, gpus int) *kueue.ClusterQueue {
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterQueue},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "nvidia.com/gpu"},
				Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("256")},
					{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("2Ti")},
					{Name: "nvidia.com/gpu", NominalQuota: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
				}}},
			}},
		},
	}
	if manager {
		cq.Spec.AdmissionChecksStrategy = &kueue.AdmissionChecksStrategy{
			AdmissionChecks: []kueue.AdmissionCheckStrategyRule{{Name: CheckName}},
		}
	}
	return cq
}

// courierKubeconfig is the kubeconfig Courier uses to reach a worker: the
// cluster's own, unless <dir>/<worker>.internal.kubeconfig exists (kind,
// where Courier runs in a pod and reaches workers by container name).
func (e *Env) courierKubeconfig(worker string) string {
	internal := filepath.Join(e.Dir, worker+".internal.kubeconfig")
	if _, err := os.Stat(internal); err == nil {
		return internal
	}
	return e.Kubeconfig(worker)
}
