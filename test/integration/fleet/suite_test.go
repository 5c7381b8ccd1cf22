// Package fleet tests Courier's fleet integration against real API
// servers: workers reached through ClusterProfiles and exec credential
// plugins, credentials that expire, and placements published as
// PlacementDecisions. The plugin is built by the suite (testdata/tokenplugin)
// and hands out bound ServiceAccount tokens of the worker.
package fleet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

const (
	// pluginName is the plugin's name in the Configuration, and the access
	// provider ClusterProfiles offer.
	pluginName = "token-plugin"
	// pluginTimeout is short so that the hanging plugin's spec runs in
	// seconds, and long enough for a run that creates a Secret and a token
	// on a busy machine.
	pluginTimeout = 4 * time.Second
	// workerLostTimeout is short so that the drain spec runs in seconds.
	workerLostTimeout = 15 * time.Second
	// profileNamespace holds the suite's ClusterProfiles on the manager.
	profileNamespace = "fleet"
	checkName        = "courier"
)

var (
	env     *framework.Environment
	courier *framework.Courier
	worker  *framework.Cluster
	// pluginPath is the built plugin; stateRoot holds the plugin's state
	// folders, one per spec.
	pluginPath, stateRoot string
)

func TestFleet(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Fleet suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	bin := GinkgoT().TempDir()
	stateRoot = GinkgoT().TempDir()
	pluginPath = filepath.Join(bin, pluginName)
	build := exec.CommandContext(ctx, "go", "build", "-o", pluginPath, "./testdata/tokenplugin")
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed(), "building the test's credential plugin")

	var err error
	env, err = framework.Start(ctx, framework.Options{Workers: 1})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	worker = env.Workers[0]

	By("giving Courier's ServiceAccount on the worker its shipped role, as config/worker/rbac.yaml does")
	objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, framework.WorkerRBAC))
	Expect(err).NotTo(HaveOccurred())
	Expect(framework.Apply(ctx, worker.Client, objs)).To(Succeed())
	Expect(env.Manager.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: profileNamespace}})).To(Succeed())

	courier, err = env.StartCourier(ctx, func(c *configv1alpha1.Configuration) {
		c.WorkerCredentials = &configv1alpha1.WorkerCredentials{
			PluginTimeout: &metav1.Duration{Duration: pluginTimeout},
			Plugins:       []configv1alpha1.CredentialPlugin{{Name: pluginName, Command: pluginPath}},
		}
		enable := true
		c.PlacementDecisions = &configv1alpha1.PlacementDecisions{Enable: &enable}
		c.WorkerLostTimeout = &metav1.Duration{Duration: workerLostTimeout}
		c.LostWorkerPolicy = courierv1alpha1.LostWorkerTimeout
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })
}, NodeTimeout(framework.StartTimeout+2*time.Minute))

// stateDir makes the plugin's state folder for one worker: the worker's
// admin kubeconfig, the plugin's mode and the lifetime it gives tokens.
func stateDir(name, mode string, lifetime time.Duration) string {
	GinkgoHelper()
	dir := filepath.Join(stateRoot, name)
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	kubeconfig, err := worker.Kubeconfig(framework.AdminUser)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "admin.kubeconfig"), kubeconfig, 0o600)).To(Succeed())
	setMode(dir, mode)
	Expect(os.WriteFile(filepath.Join(dir, "lifetime"), []byte(formatSeconds(lifetime)), 0o600)).To(Succeed())
	return dir
}

func setMode(dir, mode string) {
	GinkgoHelper()
	Expect(os.WriteFile(filepath.Join(dir, "mode"), []byte(mode), 0o600)).To(Succeed())
}
