package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	"github.com/courierdev/courier/pkg/workercluster"
)

// expectReaches waits until the WorkerCluster's connection reads from the
// worker with the credential it holds now: its direct reader reads a Lease
// just made in Courier's namespace there, which its role lets it read,
// with a new request.
func expectReaches(ctx context.Context, name string) {
	GinkgoHelper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "courier-system", GenerateName: "marker-"}}
	Expect(worker.Client.Create(ctx, lease)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, lease))).To(Succeed())
	})
	Eventually(func(g Gomega) {
		remote, err := courier.Cache.Get(name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.APIReader.Get(ctx, client.ObjectKeyFromObject(lease), &coordinationv1.Lease{})).To(Succeed())
	}).Should(Succeed())
}

func runs(dir string) int {
	data, _ := os.ReadFile(filepath.Join(dir, "runs"))
	return strings.Count(string(data), "\n")
}

var _ = Describe("A worker reached through a ClusterProfile", func() {
	It("connects with the plugin's short-lived bound ServiceAccount tokens, renews them before they expire, and reports their expiry once the plugin stops answering", func(ctx context.Context) {
		const lifetime = 12 * time.Second
		dir := stateDir("renewing", "serve", lifetime)
		createProfile(ctx, "renewing", workerProvider(pluginName, dir))
		wc := couriertesting.MakeWorkerCluster("renewing").ClusterProfile(profileNamespace, "renewing").Obj()
		createWorkerCluster(ctx, wc)

		got := expectCondition(ctx, wc.Name, courierv1alpha1.WorkerClusterActive, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Expect(got.Status.Credential).NotTo(BeNil())
		Expect(got.Status.Credential.Plugin).To(Equal(pluginName))
		Expect(got.Status.Credential.ExpiresAt).NotTo(BeNil())
		Expect(got.Status.Credential.ExpiresAt.Time).To(BeTemporally("~", got.Status.Credential.RenewedAt.Add(lifetime), 2*time.Second))
		expectCondition(ctx, wc.Name, courierv1alpha1.WorkerClusterCredentialValid, metav1.ConditionTrue, courierv1alpha1.ReasonRenewing, 10*time.Second)

		By("holding the ClusterProfile while the WorkerCluster names it")
		Eventually(func(g Gomega) {
			cp := &inventory.ClusterProfile{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: profileNamespace, Name: "renewing"}, cp)).To(Succeed())
			g.Expect(controllerutil.ContainsFinalizer(cp, workercluster.CredentialsFinalizer)).To(BeTrue())
		}).Should(Succeed())

		By("renewing the token before it expires, while the plugin revokes the tokens it handed out two runs before")
		first := got.Status.Credential.RenewedAt.Time
		Eventually(func(g Gomega) {
			g.Expect(runs(dir)).To(BeNumerically(">=", 4), "the plugin ran %d times", runs(dir))
			now := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), now)).To(Succeed())
			g.Expect(now.Status.Credential.RenewedAt.Time).To(BeTemporally(">", first.Add(2*lifetime*8/10-time.Second)))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		firstBound := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "courier-system", Name: "credential-renewing-1"}}
		Expect(apierrors.IsNotFound(worker.Client.Get(ctx, client.ObjectKeyFromObject(firstBound), firstBound))).To(BeTrue(), "the first token is revoked")
		expectCondition(ctx, wc.Name, courierv1alpha1.WorkerClusterActive, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Second)
		expectReaches(ctx, wc.Name)
		Eventually(func(g Gomega) {
			g.Expect(metricValue(g, "courier_credential_plugin_runs_total", wc.Name, "result", "success")).To(BeNumerically(">=", 4))
			g.Expect(metricValue(g, "courier_worker_credential_expiry_timestamp_seconds", wc.Name)).To(BeNumerically(">", float64(time.Now().Unix())))
			g.Expect(metricValue(g, "courier_worker_credential_expiring", wc.Name)).To(BeZero())
		}).Should(Succeed())

		By("warning, once the plugin refuses, that the token held is about to expire")
		setMode(dir, "refuse")
		expectConditionSaying(ctx, wc.Name, courierv1alpha1.WorkerClusterCredentialValid, metav1.ConditionFalse, courierv1alpha1.ReasonCredentialExpiring, And(
			ContainSubstring(`The plugin "token-plugin" failed to renew the credential, which expires at`),
			ContainSubstring("failed with exit code 1: the token service refuses to hand out tokens")), lifetime)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wc.Name)).To(ContainElement(courierv1alpha1.ReasonCredentialExpiring))
			g.Expect(metricValue(g, "courier_worker_credential_expiring", wc.Name)).To(Equal(1.0))
			g.Expect(metricValue(g, "courier_credential_plugin_runs_total", wc.Name, "result", "failed")).To(BeNumerically(">=", 1))
		}).Should(Succeed())

		By("reporting the expiry as such, not as a refusal, once it has passed")
		expired := expectConditionSaying(ctx, wc.Name, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonCredentialExpired,
			ContainSubstring(`The credential the plugin "token-plugin" handed out expired at`), lifetime+10*time.Second)
		Expect(expired.Status.DisconnectedSince).NotTo(BeNil(), "a worker Active before counts as lost from its expiry")
		expectCondition(ctx, wc.Name, courierv1alpha1.WorkerClusterCredentialValid, metav1.ConditionFalse, courierv1alpha1.ReasonCredentialExpired, 10*time.Second)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wc.Name)).To(ContainElement(courierv1alpha1.ReasonCredentialExpired))
		}).Should(Succeed())

		By("connecting again once the plugin answers")
		setMode(dir, "serve")
		expectCondition(ctx, wc.Name, courierv1alpha1.WorkerClusterActive, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		expectCondition(ctx, wc.Name, courierv1alpha1.WorkerClusterCredentialValid, metav1.ConditionTrue, courierv1alpha1.ReasonRenewing, 10*time.Second)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wc.Name)).To(ContainElement(courierv1alpha1.EventCredentialRenewed))
		}).Should(Succeed())
		expectReaches(ctx, wc.Name)
	})
})
