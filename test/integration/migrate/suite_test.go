// Package migrate runs kubectl courier migrate, in the test process, against
// a manager set up for MultiKueue with one worker, and Courier running on
// the manager with no WorkerCluster yet: what migrate applies is the only
// way Courier reaches the worker, as on a manager moving over.
package migrate

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/courierdev/courier/pkg/cli"
	"github.com/courierdev/courier/test/integration/framework"
)

var (
	env     *framework.Environment
	courier *framework.Courier
	// admin and restricted are kubeconfigs of the manager for users in
	// system:masters and with no RBAC at all.
	admin, restricted string
	cacheDir          string
)

func TestMigrate(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl courier migrate suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{Workers: 1})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	courier, err = env.StartCourier(ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })
	Expect(courier.GrantWorker(ctx, env, env.Workers[0])).To(Succeed())

	dir := GinkgoT().TempDir()
	admin, restricted, cacheDir = filepath.Join(dir, "admin"), filepath.Join(dir, "restricted"), filepath.Join(dir, "cache")
	Expect(env.Manager.WriteKubeconfig(framework.AdminUser, admin)).To(Succeed())
	Expect(env.Manager.WriteKubeconfig(framework.RestrictedUser, restricted)).To(Succeed())
}, NodeTimeout(framework.StartTimeout))

// kubectlCourier runs the plugin's command in the test process with a
// kubeconfig, and returns what it printed.
func kubectlCourier(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--cache-dir", cacheDir}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}
