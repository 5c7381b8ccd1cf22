package workercluster

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/test/integration/framework"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

// capacityTimeout covers a change held back for the status's 10s write
// period, and the periodic look that finds a usage change.
const capacityTimeout = 30 * time.Second

// createOnWorker creates objects on a worker, deleted when the spec ends.
func createOnWorker(ctx context.Context, worker *framework.Cluster, objs ...client.Object) {
	for _, obj := range objs {
		ExpectWithOffset(1, worker.Client.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, obj))).To(Succeed())
		})
	}
}

// capacityOf finds one flavor's resource in a WorkerCluster's status.
func capacityOf(wc *courierv1alpha1.WorkerCluster, flavor string, res corev1.ResourceName) *courierv1alpha1.ResourceCapacity {
	i := slices.IndexFunc(wc.Status.Capacity, func(c courierv1alpha1.ResourceCapacity) bool {
		return c.Flavor == flavor && c.Resource == string(res)
	})
	if i < 0 {
		return nil
	}
	return &wc.Status.Capacity[i]
}

// expectCapacity waits until the WorkerCluster's status shows nominal and
// usage for one flavor's resource.
func expectCapacity(ctx context.Context, wc *courierv1alpha1.WorkerCluster, flavor string, res corev1.ResourceName, nominal, usage string) *courierv1alpha1.WorkerCluster {
	got := &courierv1alpha1.WorkerCluster{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), got)).To(Succeed())
		c := capacityOf(got, flavor, res)
		g.Expect(c).NotTo(BeNil(), "status.capacity: %+v", got.Status.Capacity)
		g.Expect(c.Nominal.Cmp(resource.MustParse(nominal))).To(BeZero(), "nominal %s", c.Nominal.String())
		g.Expect(c.Usage.Cmp(resource.MustParse(usage))).To(BeZero(), "usage %s", c.Usage.String())
	}).WithTimeout(capacityTimeout).Should(Succeed())
	return got
}

var _ = Describe("Worker capacity", func() {
	It("capacity in WorkerCluster status follows a worker ClusterQueue's quota change", func(ctx context.Context) {
		worker := env.Workers[0]
		Expect(courier.GrantWorker(ctx, env, worker)).To(Succeed())
		ns, err := worker.CreateNamespace(ctx, "capacity")
		Expect(err).NotTo(HaveOccurred())
		suffix := rand.String(5)
		flavor := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "gpu-" + suffix}}
		cq := &kueue.ClusterQueue{
			ObjectMeta: metav1.ObjectMeta{Name: "team-" + suffix},
			Spec: kueue.ClusterQueueSpec{
				NamespaceSelector: &metav1.LabelSelector{},
				ResourceGroups: []kueue.ResourceGroup{{
					CoveredResources: []corev1.ResourceName{gpu, corev1.ResourceCPU},
					Flavors: []kueue.FlavorQuotas{{
						Name: kueue.ResourceFlavorReference(flavor.Name),
						Resources: []kueue.ResourceQuota{
							{Name: gpu, NominalQuota: resource.MustParse("8")},
							{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("16")},
						},
					}},
				}},
			},
		}
		lq := &kueue.LocalQueue{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "lq"},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)},
		}
		createOnWorker(ctx, worker, flavor, cq, lq)

		By("connecting with the shipped worker RBAC")
		wc := connectWorker(ctx, worker, framework.CourierUser)
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		got := expectCapacity(ctx, wc, flavor.Name, gpu, "8", "0")
		Expect(capacityOf(got, flavor.Name, corev1.ResourceCPU).Nominal.Cmp(resource.MustParse("16"))).To(BeZero())
		Expect(got.Status.CapacitySummary).To(Equal("nvidia.com/gpu 0/8, cpu 0/16"))
		remote, err := courier.Cache.Get(wc.Name)
		Expect(err).NotTo(HaveOccurred())
		offered := remote.Capacity(ns.Name, lq.Name)
		Expect(offered.Known).To(BeTrue())
		Expect(offered.ClusterQueue).To(Equal(cq.Name))
		Expect(offered.Flavors).To(HaveLen(1))
		Expect(offered.Flavors[0].Resources[gpu].Nominal).To(Equal(int64(8000)))
		Expect(remote.Capacity(ns.Name, "no-such-queue").Known).To(BeFalse())

		By("lowering the nominal quota to 4 GPUs")
		Expect(worker.Client.Get(ctx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
		cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota = resource.MustParse("4")
		Expect(worker.Client.Update(ctx, cq)).To(Succeed())
		expectCapacity(ctx, wc, flavor.Name, gpu, "4", "0")

		By("showing the usage the worker's Kueue reports")
		Expect(worker.Client.Get(ctx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
		cq.Status.FlavorsUsage = []kueue.FlavorUsage{{
			Name: kueue.ResourceFlavorReference(flavor.Name),
			Resources: []kueue.ResourceUsage{
				{Name: gpu, Total: resource.MustParse("3")},
				{Name: corev1.ResourceCPU, Total: resource.MustParse("6")},
			},
		}}
		Expect(worker.Client.Status().Update(ctx, cq)).To(Succeed())
		got = expectCapacity(ctx, wc, flavor.Name, gpu, "4", "3")
		Expect(got.Status.CapacitySummary).To(Equal("nvidia.com/gpu 3/4, cpu 6/16"))
		Eventually(func(g Gomega) {
			offered := remote.Capacity(ns.Name, lq.Name)
			g.Expect(offered.Flavors).To(HaveLen(1))
			g.Expect(offered.Flavors[0].Resources[gpu].Free()).To(Equal(int64(1000)))
		}).Should(Succeed())
	})

	It("keeps a worker whose credentials may not read its quota Active, with its capacity unknown until granted", func(ctx context.Context) {
		worker := env.Workers[1]
		objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, framework.WorkerRBAC))
		Expect(err).NotTo(HaveOccurred())
		role := &rbacv1.ClusterRole{}
		for _, obj := range objs {
			if obj.GetKind() == "ClusterRole" {
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role)).To(Succeed())
			}
		}
		quotaRule := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "clusterqueues") })
		Expect(quotaRule).NotTo(BeNumerically("<", 0), "config/worker/rbac.yaml grants no access to clusterqueues")
		full := slices.Clone(role.Rules)
		role.ObjectMeta = metav1.ObjectMeta{Name: "courier-worker-no-quota-" + rand.String(5)}
		role.Rules = slices.Delete(role.Rules, quotaRule, quotaRule+1)
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.CourierUser}},
		}
		createOnWorker(ctx, worker, role, binding)

		wc := connectWorker(ctx, worker, framework.CourierUser)
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Eventually(func(g Gomega) {
			got := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), got)).To(Succeed())
			g.Expect(got.Status.Capacity).To(BeEmpty())
			g.Expect(got.Status.CapacitySummary).To(HavePrefix("unknown: Courier may not list kueue.x-k8s.io clusterqueues, localqueues, resourceflavors there"))
		}).WithTimeout(capacityTimeout).Should(Succeed())
		remote, err := courier.Cache.Get(wc.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(remote.Capacity("default", "lq").Known).To(BeFalse())

		By("granting the quota rule, without touching the WorkerCluster")
		Expect(worker.Client.Get(ctx, client.ObjectKeyFromObject(role), role)).To(Succeed())
		role.Rules = full
		Expect(worker.Client.Update(ctx, role)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), got)).To(Succeed())
			g.Expect(got.Status.CapacitySummary).NotTo(HavePrefix("unknown"))
		}).WithTimeout(cluster.DefaultKindsPeriod + capacityTimeout).Should(Succeed())
	})
})
