package dispatch

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/fence"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// suiteFence is the suite's fence settings: short, so that a job of a
// Fenced worker moves a fence's margin (about 75 s) after it was cut off.
var suiteFence = &configv1alpha1.Fence{
	Timeout:           &metav1.Duration{Duration: 3 * time.Second},
	HeartbeatInterval: &metav1.Duration{Duration: time.Second},
	StopGrace:         &metav1.Duration{Duration: time.Second},
}

// fenceOn runs the fence on worker, without access to the manager, until
// the spec ends, sets the worker's lostWorkerPolicy to Fenced, and waits
// until Courier sees the fence answer.
func fenceOn(ctx context.Context, worker *framework.Cluster) {
	GinkgoHelper()
	f, err := fence.New(worker.RestConfig(framework.AdminUser), nil, fence.Options{
		Namespace: configv1alpha1.DefaultFenceNamespace, PollInterval: 200 * time.Millisecond, Identity: "fence-" + worker.Name})
	Expect(err).NotTo(HaveOccurred())
	stop := framework.Run(f.Start)
	DeferCleanup(func(ctx context.Context) {
		stop()
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: configv1alpha1.DefaultFenceNamespace, Name: courierv1alpha1.FenceLeaseName}}
		Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, lease))).To(Succeed())
	})
	setLostWorkerPolicy(ctx, worker, courierv1alpha1.LostWorkerFenced)
	DeferCleanup(func(ctx context.Context) { setLostWorkerPolicy(ctx, worker, "") })
	Eventually(func(g Gomega) {
		wc := workerCluster(ctx, g, worker.Name)
		g.Expect(meta.IsStatusConditionTrue(wc.Status.Conditions, courierv1alpha1.WorkerClusterFenceReady)).To(BeTrue(), "conditions: %+v", wc.Status.Conditions)
	}).Should(Succeed())
}

func setLostWorkerPolicy(ctx context.Context, worker *framework.Cluster, policy courierv1alpha1.LostWorkerPolicy) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		wc := workerCluster(ctx, g, worker.Name)
		wc.Spec.LostWorkerPolicy = policy
		g.Expect(env.Manager.Client.Update(ctx, wc)).To(Succeed())
	}).Should(Succeed())
}

// cutOff points Courier's kubeconfig for worker at a port nobody listens
// on: Courier loses the worker while the worker, its fence and the test
// go on as before, as in a partition on Courier's side.
func cutOff(ctx context.Context, worker *framework.Cluster) {
	GinkgoHelper()
	ports, err := framework.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	data, err := worker.Kubeconfig(framework.CourierUser)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.Server = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	}
	data, err = clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		secret := &corev1.Secret{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: worker.Name}, secret)).To(Succeed())
		secret.Data["kubeconfig"] = data
		g.Expect(env.Manager.Client.Update(ctx, secret)).To(Succeed())
	}).Should(Succeed())
	DeferCleanup(func(ctx context.Context) { setKubeconfig(ctx, worker, framework.CourierUser) })
	Eventually(func(g Gomega) {
		wc := workerCluster(ctx, g, worker.Name)
		g.Expect(wc.Status.DisconnectedSince).NotTo(BeNil())
	}).Should(Succeed())
}

// expectFenced waits for the worker's fence to stop wl's copy there, and
// returns when it did, by the fence's clock.
func expectFenced(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload) time.Time {
	GinkgoHelper()
	var at time.Time
	Eventually(func(g Gomega) {
		cp := kueuesim.Read(ctx, g, worker, wl)
		g.Expect(cp).NotTo(BeNil())
		g.Expect(cp.Spec.Active).To(HaveValue(BeFalse()))
		var err error
		at, err = time.Parse(time.RFC3339, cp.Annotations[courierv1alpha1.FencedAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	return at
}

var _ = Describe("A worker under the Fenced policy", Ordered, func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("dispatches a job its fence stopped again, once, when Courier reaches the worker before the job moved", func(ctx context.Context) {
		wl, tj := placeOnSpare(ctx, ns)
		fenceOn(ctx, spare)

		By("cutting Courier off the worker until its fence stops the copy")
		cutOff(ctx, spare)
		expectFenced(ctx, spare, wl)
		Expect(spareSim.CheckState(spareSim.ManagerWorkload(ctx, Default, wl)).State).To(Equal(kueue.CheckStateReady), "the job moved before the fence's margin")

		By("reaching the worker again: the stopped copy goes, and the job is dispatched again")
		setKubeconfig(ctx, spare, framework.CourierUser)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, "fence stopped the workload's copy")
		spareSim.EvictAndRequeue(ctx, wl)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, spare, tj)).To(BeNil())
		}).Should(Succeed())
		spareSim.ReserveQuota(ctx, wl)
		expectCopies(ctx, wl, pool[0], spare)
		kueuesim.AdmitOn(ctx, pool[0], wl)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[0].Name)
		expectTrainJobOnlyOn(ctx, tj, pool[0])
	})

	It("moves a cut-off worker's job only a fence's margin after Courier gave the worker up, and removes the stopped copy when it is back", func(ctx context.Context) {
		wl, tj := placeOnSpare(ctx, ns)
		fenceOn(ctx, spare)

		By("cutting Courier off the worker: its fence stops the copy, Courier gives the worker up")
		cutOff(ctx, spare)
		fencedAt := expectFenced(ctx, spare, wl)
		var revokedSince time.Time
		Eventually(func(g Gomega) {
			wc := workerCluster(ctx, g, spare.Name)
			g.Expect(wc.Status.RevokedSince).NotTo(BeNil())
			revokedSince = wc.Status.RevokedSince.Time
		}).Should(Succeed())

		By("moving the job once the fence's margin has passed, and not before")
		margin := configv1alpha1.MinFencedLostTimeout(suiteFence)
		var movedAt time.Time
		Eventually(func(g Gomega) {
			got := spareSim.ManagerWorkload(ctx, g, wl)
			c := spareSim.CheckState(got)
			g.Expect(c.State).To(Equal(kueue.CheckStateRetry), "check: %+v", c)
			g.Expect(c.Message).To(ContainSubstring("its fence must have stopped the job by"))
			movedAt = c.LastTransitionTime.Time
		}).WithTimeout(margin + time.Minute).Should(Succeed())
		// Both are stored with one-second precision.
		Expect(movedAt).To(BeTemporally(">=", revokedSince.Add(margin-time.Second)))
		Expect(fencedAt).To(BeTemporally("<=", movedAt), "the job moved before the fence stopped its copy")

		By("running it on the other worker, and removing the stopped copy once the worker is back")
		spareSim.EvictAndRequeue(ctx, wl)
		spareSim.ReserveQuota(ctx, wl)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, pool[0], wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, pool[0], wl)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[0].Name)
		setKubeconfig(ctx, spare, framework.CourierUser)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, spare, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, spare, wl)).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		expectTrainJobOnlyOn(ctx, tj, pool[0])
		Eventually(func(g Gomega) {
			g.Expect(workerCluster(ctx, g, spare.Name).Status.RevokedSince).To(BeNil(), "a worker back in reach is counted on again")
		}).Should(Succeed())
	})
})
