package workercluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// expectFence waits until the WorkerCluster's FenceReady condition has the
// status and reason, and returns its message.
func expectFence(ctx context.Context, wc *courierv1alpha1.WorkerCluster, status metav1.ConditionStatus, reason string) string {
	var msg string
	EventuallyWithOffset(1, func(g Gomega) {
		got := &courierv1alpha1.WorkerCluster{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), got)).To(Succeed())
		cond := meta.FindStatusCondition(got.Status.Conditions, courierv1alpha1.WorkerClusterFenceReady)
		g.Expect(cond).NotTo(BeNil())
		g.Expect([]string{string(cond.Status), cond.Reason}).To(Equal([]string{string(status), reason}), "FenceReady: %+v", cond)
		msg = cond.Message
	}).WithTimeout(45 * time.Second).Should(Succeed())
	return msg
}

var _ = Describe("Courier's heartbeat on a worker", func() {
	It("renews it with the identity config/worker/rbac.yaml grants, and reports whether a fence answers there", func(ctx context.Context) {
		worker := env.Workers[1]
		Expect(courier.GrantWorker(ctx, env, worker)).To(Succeed())
		wc := connectWorker(ctx, worker, framework.CourierUser)
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, 30*time.Second)

		By("renewing the heartbeat Lease, whose duration is the fence's timeout")
		key := client.ObjectKey{Namespace: "courier-system", Name: courierv1alpha1.HeartbeatLeasePrefix + "courier"}
		heartbeat := &coordinationv1.Lease{}
		Eventually(func(g Gomega) {
			g.Expect(worker.Client.Get(ctx, key, heartbeat)).To(Succeed())
		}).Should(Succeed())
		Expect(heartbeat.Spec.HolderIdentity).To(Equal(ptr.To("courier")))
		Expect(heartbeat.Spec.LeaseDurationSeconds).To(Equal(ptr.To[int32](120)))
		first := heartbeat.ResourceVersion
		Eventually(func(g Gomega) {
			g.Expect(worker.Client.Get(ctx, key, heartbeat)).To(Succeed())
			g.Expect(heartbeat.ResourceVersion).NotTo(Equal(first), "the heartbeat was not renewed")
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("saying that no fence answers there")
		Expect(expectFence(ctx, wc, metav1.ConditionFalse, courierv1alpha1.ReasonNoFence)).To(ContainSubstring("install config/worker/fence.yaml"))

		By("seeing a fence that renews its Lease and reads the manager")
		fence := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "courier-system", Name: courierv1alpha1.FenceLeaseName,
			Annotations: map[string]string{courierv1alpha1.FenceManagerAnnotation: "Reading", courierv1alpha1.FencedOriginsAnnotation: ""}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fence-test"), RenewTime: &metav1.MicroTime{Time: time.Now()}}}
		Expect(worker.Client.Create(ctx, fence)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, fence))).To(Succeed())
		})
		Expect(expectFence(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonFenceAnswering)).To(ContainSubstring("reads the manager"))

		By("hearing from the fence that it stops this manager's copies")
		fence.Annotations[courierv1alpha1.FencedOriginsAnnotation] = "courier"
		fence.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		Expect(worker.Client.Update(ctx, fence)).To(Succeed())
		expectFence(ctx, wc, metav1.ConditionFalse, courierv1alpha1.ReasonFenceStopping)
	})
})
