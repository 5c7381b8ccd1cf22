package fleet

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/placementdecision"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/pkg/workercluster"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

var _ = Describe("A ClusterProfile deleted while a job runs on its worker", func() {
	It("publishes the job's placement, then drains the WorkerCluster, which Courier deletes, holding the profile until the job has finished", func(ctx context.Context) {
		dir := stateDir("draining", "serve", 10*time.Minute)
		name := profileWorker(ctx, "draining", workerProvider(pluginName, dir))
		expectCondition(ctx, name, courierv1alpha1.WorkerClusterActive, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Expect(courier.CreateCheck(ctx, env, checkName, "draining", courierv1alpha1.AllAtOnce, []string{name})).To(Succeed())
		sim := &kueuesim.Sim{Env: env, Check: checkName}
		ns, err := env.NamespaceEverywhere(ctx, "jobs")
		Expect(err).NotTo(HaveOccurred())

		By("placing a job on the worker")
		tj := trainertesting.MakeTrainJob("tj", ns).ManagedBy(adapter.TrainJobManagedBy).Queue("lq").Obj()
		wl := sim.Submit(ctx, tj)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, worker, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, worker, wl)
		wl = sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, name)

		By("publishing the placement as a PlacementDecision naming the worker's ClusterProfile")
		Eventually(func(g Gomega) {
			pd := &inventory.PlacementDecision{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wl), pd)).To(Succeed())
			g.Expect(pd.Decisions).To(HaveLen(1))
			g.Expect(pd.Decisions[0].ClusterProfileRef).To(Equal(inventory.ClusterProfileReference{Namespace: profileNamespace, Name: "draining"}))
			g.Expect(pd.SchedulerName).To(Equal(courierv1alpha1.ControllerName))
			g.Expect(pd.Labels).To(HaveKeyWithValue(placementdecision.WorkerClusterLabel, name))
			g.Expect(pd.Labels).To(HaveKeyWithValue(inventory.PlacementKeyLabel, string(wl.UID)))
			g.Expect(metav1.IsControlledBy(pd, wl)).To(BeTrue())
		}).Should(Succeed())

		By("deleting the ClusterProfile, as an inventory does when the cluster leaves it")
		Expect(env.Manager.Client.Delete(ctx, &inventory.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: profileNamespace, Name: "draining"}})).To(Succeed())
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
			g.Expect(wc.DeletionTimestamp).NotTo(BeNil(), "Courier deletes the WorkerCluster of a deleted profile")
			draining := meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterDraining)
			g.Expect(draining).NotTo(BeNil())
			g.Expect(draining.Reason).To(Equal(courierv1alpha1.ReasonWorkloadsPlaced))
			g.Expect(draining.Message).To(ContainSubstring(client.ObjectKeyFromObject(wl).String()))
			g.Expect(eventReasons(ctx, g, name)).To(ContainElement(courierv1alpha1.EventClusterProfileDeleted))
		}).Should(Succeed())

		By("keeping the profile, the connection and the job while it runs")
		Consistently(func(g Gomega) {
			cp := &inventory.ClusterProfile{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: profileNamespace, Name: "draining"}, cp)).To(Succeed())
			g.Expect(cp.DeletionTimestamp).NotTo(BeNil())
			g.Expect(controllerutil.ContainsFinalizer(cp, workercluster.CredentialsFinalizer)).To(BeTrue())
			_, err := courier.Cache.Get(name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kueuesim.Read(ctx, g, worker, tj)).NotTo(BeNil())
			g.Expect(sim.CheckState(sim.ManagerWorkload(ctx, g, wl)).State).To(Equal(kueue.CheckStateReady))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		By("mirroring the job's end, then letting the WorkerCluster and the profile go")
		kueuesim.SetRemoteCondition(ctx, worker, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue,
			Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully"})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(sim.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, &courierv1alpha1.WorkerCluster{}))).To(BeTrue(), "the WorkerCluster is gone")
			g.Expect(apierrors.IsNotFound(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: profileNamespace, Name: "draining"}, &inventory.ClusterProfile{}))).To(BeTrue(), "the profile is gone")
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})

var _ = Describe("A kubeconfig with a bound ServiceAccount token", func() {
	It("shows when the token expires, and warns ahead of time that nothing renews it", func(ctx context.Context) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "courier-system", Name: "courier"}}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		Expect(worker.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())

		cfg := worker.RestConfig(framework.AdminUser)
		kc := clientcmdapi.NewConfig()
		kc.Clusters["worker"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos["courier"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		kc.Contexts["worker"] = &clientcmdapi.Context{Cluster: "worker", AuthInfo: "courier"}
		kc.CurrentContext = "worker"
		data, err := clientcmd.Write(*kc)
		Expect(err).NotTo(HaveOccurred())
		name := kubeconfigWorker(ctx, "bound-token", data)

		expectCondition(ctx, name, courierv1alpha1.WorkerClusterActive, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		got := expectCondition(ctx, name, courierv1alpha1.WorkerClusterCredentialValid, metav1.ConditionFalse, courierv1alpha1.ReasonCredentialExpiring, 10*time.Second)
		Expect(got.Status.Credential).NotTo(BeNil())
		Expect(got.Status.Credential.Plugin).To(BeEmpty())
		Expect(got.Status.Credential.ExpiresAt.Time).To(BeTemporally("~", tr.Status.ExpirationTimestamp.Time, time.Second))
		Expect(message(got, courierv1alpha1.WorkerClusterCredentialValid)).To(ContainSubstring(
			`and nothing renews it. Put a kubeconfig with a new token or certificate in Secret ` + courier.Namespace + `/bound-token, key "kubeconfig"`))
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, name)).To(ContainElement(courierv1alpha1.ReasonCredentialExpiring))
			g.Expect(metricValue(g, "courier_worker_credential_expiring", name)).To(Equal(1.0))
			g.Expect(metricValue(g, "courier_worker_credential_expiry_timestamp_seconds", name)).To(Equal(float64(tr.Status.ExpirationTimestamp.Unix())))
		}).Should(Succeed())
	})
})
