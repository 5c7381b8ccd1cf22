package dispatch

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	"github.com/courierdev/courier/pkg/workercluster"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// setKubeconfig points a worker's kubeconfig Secret at one of its users.
func setKubeconfig(ctx context.Context, worker *framework.Cluster, user string) {
	GinkgoHelper()
	data, err := worker.Kubeconfig(user)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		secret := &corev1.Secret{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: worker.Name}, secret)).To(Succeed())
		secret.Data["kubeconfig"] = data
		g.Expect(env.Manager.Client.Update(ctx, secret)).To(Succeed())
	}).Should(Succeed())
}

// workerCluster reads a WorkerCluster, nil if there is none.
func workerCluster(ctx context.Context, g Gomega, name string) *courierv1alpha1.WorkerCluster {
	wc := &courierv1alpha1.WorkerCluster{}
	err := env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return wc
}

// placeOnSpare submits a TrainJob through the spare check and lets the
// spare worker admit it.
func placeOnSpare(ctx context.Context, ns string) (*kueue.Workload, *trainer.TrainJob) {
	GinkgoHelper()
	tj := trainJob(ns).Obj()
	wl := spareSim.Submit(ctx, tj)
	expectCopies(ctx, wl, pool[0], spare)
	kueuesim.AdmitOn(ctx, spare, wl)
	spareSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, spare.Name)
	expectTrainJobOnlyOn(ctx, tj, spare)
	return wl, tj
}

var _ = Describe("Losing a worker", Ordered, func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("dispatches again, after workerLostTimeout, the jobs of a worker that refuses Courier's credentials", func(ctx context.Context) {
		wl, tj := placeOnSpare(ctx, ns)

		By("replacing the worker's kubeconfig with one whose user may do nothing")
		setKubeconfig(ctx, spare, framework.RestrictedUser)
		DeferCleanup(func(ctx context.Context) { setKubeconfig(ctx, spare, framework.CourierUser) })
		var lostAt time.Time
		Eventually(func(g Gomega) {
			wc := workerCluster(ctx, g, spare.Name)
			active := meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterActive)
			g.Expect(active).NotTo(BeNil())
			g.Expect(active.Reason).To(Equal(courierv1alpha1.ReasonForbidden))
			g.Expect(wc.Status.DisconnectedSince).NotTo(BeNil(), "a worker Active before counts as lost from its configuration error")
			lostAt = wc.Status.DisconnectedSince.Time
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(spareSim.CheckState(spareSim.ManagerWorkload(ctx, g, wl)).State).To(Equal(kueue.CheckStateReady))
		}).WithTimeout(workerLostTimeout/3).Should(Succeed(), "a short configuration error must not re-dispatch")
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, "has refused Courier's connection (Forbidden)")
		// disconnectedSince is stored with one-second precision.
		Expect(time.Since(lostAt)).To(BeNumerically(">=", workerLostTimeout-time.Second))
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventWorkerUnusable))
		}).Should(Succeed())

		By("dispatching it to the other worker once the manager's Kueue requeues it")
		spareSim.EvictAndRequeue(ctx, wl)
		spareSim.ReserveQuota(ctx, wl)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, pool[0], wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, pool[0], wl)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[0].Name)

		By("removing the stale copies once the worker's kubeconfig is fixed")
		setKubeconfig(ctx, spare, framework.CourierUser)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, spare, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, spare, wl)).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		expectTrainJobOnlyOn(ctx, tj, pool[0])
	})

	It("does not dispatch a job evicted on the manager again while its worker may still run it", func(ctx context.Context) {
		wl, tj := placeOnSpare(ctx, ns)
		Expect(spare.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			if !spare.APIServerRunning() {
				Expect(spare.StartAPIServer(ctx)).To(Succeed())
			}
		})

		By("evicting and requeueing it on the manager while the worker is away")
		spareSim.EvictAndRequeue(ctx, wl)
		spareSim.ReserveQuota(ctx, wl)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "held this workload before it was evicted and is out of reach")
		expectNothingOn(ctx, pool[0], wl, tj, workerLostTimeout/3)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventWaitingForWorker))
		}).Should(Succeed())

		By("dispatching it again once the worker is back and the earlier copies are gone")
		Expect(spare.StartAPIServer(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, spare, tj)).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		expectCopies(ctx, wl, pool[0], spare)
		kueuesim.AdmitOn(ctx, pool[0], wl)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[0].Name)
		expectTrainJobOnlyOn(ctx, tj, pool[0])
	})

	It("drains a WorkerCluster deleted with its kubeconfig Secret: its jobs run on, move after workerLostTimeout, and then both go", func(ctx context.Context) {
		wl, tj := placeOnSpare(ctx, ns)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: courier.Namespace, Name: spare.Name}}
		Eventually(func(g Gomega) {
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			g.Expect(secret.Finalizers).To(ContainElement(workercluster.CredentialsFinalizer))
		}).Should(Succeed())

		By("deleting the worker's WorkerCluster and its Secret together, as a teardown does")
		Expect(env.Manager.Client.Delete(ctx, couriertesting.MakeWorkerCluster(spare.Name).Obj())).To(Succeed())
		Expect(env.Manager.Client.Delete(ctx, secret)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Eventually(func(g Gomega) { g.Expect(workerCluster(ctx, g, spare.Name)).To(BeNil()) }).WithTimeout(time.Minute).Should(Succeed())
			Expect(courier.KubeconfigSecret(ctx, env.Manager, spare.Name, spare, framework.CourierUser)).To(Succeed())
			Expect(env.Manager.Client.Create(ctx, couriertesting.MakeWorkerCluster(spare.Name).Obj())).To(Succeed())
		})
		Eventually(func(g Gomega) {
			wc := workerCluster(ctx, g, spare.Name)
			g.Expect(wc).NotTo(BeNil(), "the WorkerCluster went while a job still ran there")
			draining := meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterDraining)
			g.Expect(draining).NotTo(BeNil())
			g.Expect(draining.Reason).To(Equal(courierv1alpha1.ReasonWorkloadsPlaced))
			g.Expect(draining.Message).To(ContainSubstring(client.ObjectKeyFromObject(wl).String()))
		}).Should(Succeed())

		By("sending new jobs elsewhere")
		other := trainJob(ns).Obj()
		otherWl := spareSim.Submit(ctx, other)
		spareSim.ExpectCheck(ctx, otherWl, kueue.CheckStatePending, "its WorkerCluster is being deleted")
		expectCopies(ctx, otherWl, pool[0])

		By("keeping the placed job where it runs until workerLostTimeout, then dispatching it again")
		Consistently(func(g Gomega) {
			g.Expect(spareSim.CheckState(spareSim.ManagerWorkload(ctx, g, wl)).State).To(Equal(kueue.CheckStateReady))
			g.Expect(kueuesim.Read(ctx, g, spare, tj)).NotTo(BeNil())
		}).WithTimeout(workerLostTimeout / 3).Should(Succeed())
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, "has been draining since its WorkerCluster was deleted")

		By("keeping the credentials for the drain: the worker stays reachable")
		Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.DeletionTimestamp).NotTo(BeNil())
		_, err := courier.Cache.Get(spare.Name)
		Expect(err).NotTo(HaveOccurred())

		By("removing its copies once the manager's Kueue evicts it, and then the WorkerCluster and the Secret")
		spareSim.EvictAndRequeue(ctx, wl)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, spare, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, spare, wl)).To(BeNil())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(workerCluster(ctx, g, spare.Name)).To(BeNil())
			g.Expect(apierrors.IsNotFound(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}))).To(BeTrue(), "the Secret outlived its WorkerCluster")
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})
