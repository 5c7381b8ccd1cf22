package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	"github.com/courierdev/courier/test/integration/framework"
)

// profileWorker creates a ClusterProfile offering providers and a
// WorkerCluster reaching the worker through it.
func profileWorker(ctx context.Context, name string, providers ...inventory.AccessProvider) string {
	GinkgoHelper()
	createProfile(ctx, name, providers...)
	createWorkerCluster(ctx, couriertesting.MakeWorkerCluster(name).ClusterProfile(profileNamespace, name).Obj())
	return name
}

// execKubeconfig is a kubeconfig of the worker whose user runs command as
// an exec plugin, told the cluster and the plugin's state folder.
func execKubeconfig(command, dir string) []byte {
	GinkgoHelper()
	cfg := worker.RestConfig(framework.AdminUser)
	kc := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, Extensions: map[string]runtime.Object{}}
	ext := execExtension(dir)
	cluster.Extensions[ext.Name] = &runtime.Unknown{Raw: ext.Extension.Raw, ContentType: runtime.ContentTypeJSON}
	kc.Clusters["worker"] = cluster
	kc.AuthInfos["courier"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		Command: command, APIVersion: "client.authentication.k8s.io/v1", ProvideClusterInfo: true, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	kc.Contexts["worker"] = &clientcmdapi.Context{Cluster: "worker", AuthInfo: "courier"}
	kc.CurrentContext = "worker"
	data, err := clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// kubeconfigWorker creates a kubeconfig Secret and a WorkerCluster using it.
func kubeconfigWorker(ctx context.Context, name string, kubeconfig []byte) string {
	GinkgoHelper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: courier.Namespace}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	Expect(env.Manager.Client.Create(ctx, secret)).To(Succeed())
	createWorkerCluster(ctx, couriertesting.MakeWorkerCluster(name).Obj())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, secret))).To(Succeed())
	})
	return name
}

var _ = Describe("Bad input", func() {
	It("reports a ClusterProfile that is missing, that offers no access provider, or none a plugin serves", func(ctx context.Context) {
		missing := "missing-profile"
		createWorkerCluster(ctx, couriertesting.MakeWorkerCluster(missing).ClusterProfile(profileNamespace, missing).Obj())
		expectConditionSaying(ctx, missing, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonClusterProfileNotFound,
			ContainSubstring("ClusterProfile fleet/missing-profile does not exist"), 30*time.Second)
		expectCondition(ctx, missing, courierv1alpha1.WorkerClusterCredentialValid, metav1.ConditionUnknown, courierv1alpha1.ReasonNoCredential, 10*time.Second)

		empty := profileWorker(ctx, "no-providers")
		expectConditionSaying(ctx, empty, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonNoAccessProvider,
			ContainSubstring("ClusterProfile fleet/no-providers offers no access provider in its status yet"), 30*time.Second)

		foreign := profileWorker(ctx, "foreign-providers", workerProvider("azure", ""), workerProvider("secretreader", ""))
		expectConditionSaying(ctx, foreign, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonNoAccessProvider, ContainSubstring(
			"offers the access providers azure, secretreader, and the Configuration's workerCredentials.plugins serves none of them (it lists token-plugin)"), 30*time.Second)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, foreign)).To(ContainElement(courierv1alpha1.ReasonNoAccessProvider))
		}).Should(Succeed())
	})

	It("reports a plugin that prints garbage, without quoting it", func(ctx context.Context) {
		dir := stateDir("garbage", "garbage", time.Minute)
		name := profileWorker(ctx, "garbage", workerProvider(pluginName, dir))
		expectConditionSaying(ctx, name, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonCredentialPluginFailed, And(
			ContainSubstring(`The credential plugin "token-plugin" (`+pluginPath+`) printed what is not an ExecCredential of client.authentication.k8s.io/v1 (not JSON).`),
			Not(ContainSubstring("503"))), 30*time.Second)
		Eventually(func(g Gomega) {
			g.Expect(metricValue(g, "courier_credential_plugin_runs_total", name, "result", "invalid")).To(BeNumerically(">=", 1))
		}).Should(Succeed())
	})

	It("stops a plugin that hangs at the timeout, and says so", func(ctx context.Context) {
		dir := stateDir("hang", "hang", time.Minute)
		name := profileWorker(ctx, "hang", workerProvider(pluginName, dir))
		expectConditionSaying(ctx, name, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonCredentialPluginFailed, ContainSubstring(
			`The credential plugin "token-plugin" (`+pluginPath+`) did not answer within workerCredentials.pluginTimeout (4s) and was stopped.`), 30*time.Second)
		By("leaving no plugin process behind")
		pid, err := os.ReadFile(filepath.Join(dir, "pid"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
			return err != nil || strings.Contains(string(stat), ") Z ")
		}).WithTimeout(2 * pluginTimeout).Should(BeTrue())
		Eventually(func(g Gomega) {
			g.Expect(metricValue(g, "courier_credential_plugin_runs_total", name, "result", "timeout")).To(BeNumerically(">=", 1))
		}).Should(Succeed())
	})

	It("refuses a kubeconfig's exec plugin that the Configuration does not list, naming it, and runs one it lists, by name", func(ctx context.Context) {
		refused := kubeconfigWorker(ctx, "unlisted-plugin", execKubeconfig("/usr/local/bin/gke-gcloud-auth-plugin", ""))
		expectConditionSaying(ctx, refused, courierv1alpha1.WorkerClusterActive, metav1.ConditionFalse, courierv1alpha1.ReasonPluginNotAllowed, ContainSubstring(
			`runs the exec plugin "/usr/local/bin/gke-gcloud-auth-plugin", which the Configuration does not allow. To let Courier run it, list it under workerCredentials.plugins`), 30*time.Second)

		dir := stateDir("kubeconfig-exec", "serve", 10*time.Minute)
		allowed := kubeconfigWorker(ctx, "listed-plugin", execKubeconfig(pluginName, dir))
		got := expectCondition(ctx, allowed, courierv1alpha1.WorkerClusterActive, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Expect(got.Status.Credential).NotTo(BeNil())
		Expect(got.Status.Credential.Plugin).To(Equal(pluginName))
		expectReaches(ctx, allowed)
	})
})
