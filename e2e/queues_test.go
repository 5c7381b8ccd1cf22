package e2e

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

// specQueues are the GPUs a spec's own queues hold, and whether they
// preempt lower priorities.
type specQueues struct {
	managerGPUs, workerGPUs int64
	preempt                 bool
}

// queuesIn gives a spec a namespace of its own on every cluster, with
// LocalQueue lq into a ClusterQueue of the namespace's name; the manager's
// runs the AdmissionCheck of that name too, which the spec creates. When
// the spec ends, the manager's jobs go first, so that their copies are
// removed, then the namespaces, the queues, and the check and
// DispatchPolicy of the namespace's name. It returns the namespace.
func queuesIn(ctx context.Context, prefix string, q specQueues) string {
	GinkgoHelper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(manager.client.Create(ctx, nsObj)).To(Succeed())
	ns := nsObj.Name
	everywhere := append([]cluster{manager}, workers...)
	for _, c := range everywhere {
		gpus, cq := q.workerGPUs, kueuetesting.MakeClusterQueue(ns)
		if c.name == manager.name {
			gpus, cq = q.managerGPUs, cq.Check(ns)
		} else {
			Expect(c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		cq.Flavor("default", corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("64"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			gpuResource:           *resource.NewQuantity(gpus, resource.DecimalSI),
		})
		if q.preempt {
			cq.PreemptWithin(kueue.PreemptionPolicyLowerPriority)
		}
		Expect(c.client.Create(ctx, cq.Obj())).To(Succeed())
		Expect(c.client.Create(ctx, kueuetesting.MakeLocalQueue(queue, ns, ns).Obj())).To(Succeed())
	}
	DeferCleanup(func(ctx context.Context) {
		Expect(manager.client.DeleteAllOf(ctx, &trainer.TrainJob{}, client.InNamespace(ns),
			client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			for _, c := range everywhere {
				list := &trainer.TrainJobList{}
				g.Expect(c.client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
				g.Expect(list.Items).To(BeEmpty(), "TrainJobs left on %s", c.name)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		for _, c := range everywhere {
			Expect(client.IgnoreNotFound(c.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
			Expect(client.IgnoreNotFound(c.client.Delete(ctx, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		}
		Expect(client.IgnoreNotFound(manager.client.Delete(ctx, &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		Expect(client.IgnoreNotFound(manager.client.Delete(ctx, &courierv1alpha1.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	})
	return ns
}

// courierCheck creates the DispatchPolicy and Courier's AdmissionCheck of
// the name ns, and waits until the check is Active.
func courierCheck(ctx context.Context, ns string, policy courierv1alpha1.DispatchPolicySpec) {
	GinkgoHelper()
	Expect(manager.client.Create(ctx, &courierv1alpha1.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: policy})).To(Succeed())
	Expect(manager.client.Create(ctx, framework.AdmissionCheck(ns, ns))).To(Succeed())
	awaitActive(ctx, ns)
}

// awaitActive waits until the AdmissionCheck's controller says it is
// Active.
func awaitActive(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		check := &kueue.AdmissionCheck{}
		g.Expect(manager.client.Get(ctx, client.ObjectKey{Name: name}, check)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(check.Status.Conditions, kueue.AdmissionCheckActive)).To(BeTrue(), "AdmissionCheck %s: %+v", name, check.Status.Conditions)
	}).Should(Succeed())
}
