// Package plugin runs kubectl courier's commands, in the test process,
// against a manager and two workers with Courier dispatching between them
// and the test playing Kueue.
package plugin

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cli"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

const (
	checkName  = "courier"
	policyName = "all-workers"
)

var (
	env     *framework.Environment
	courier *framework.Courier
	sim     *kueuesim.Sim
	// kubeconfig is the manager admin's, as a user of the plugin has it.
	kubeconfig string
	cacheDir   string
)

func TestPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl courier suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{Workers: 2})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	sim = &kueuesim.Sim{Env: env, Check: checkName}

	courier, err = env.StartCourier(ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })
	names, err := courier.ConnectWorkers(ctx, env)
	Expect(err).NotTo(HaveOccurred())
	Expect(courier.CreateCheck(ctx, env, checkName, policyName, courierv1alpha1.AllAtOnce, names)).To(Succeed())
	for _, w := range env.Workers {
		grantEventReads(ctx, w)
	}

	dir := GinkgoT().TempDir()
	kubeconfig, cacheDir = filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "cache")
	Expect(env.Manager.WriteKubeconfig(framework.AdminUser, kubeconfig)).To(Succeed())
}, NodeTimeout(framework.StartTimeout))

// grantEventReads lets Courier's identity on a worker read events, as
// docs/kubectl-courier.md suggests for the worker side of status.
func grantEventReads(ctx context.Context, worker *framework.Cluster) {
	GinkgoHelper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "courier-events-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "courier-events-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.CourierUser}}}
	Expect(worker.Client.Create(ctx, role)).To(Succeed())
	Expect(worker.Client.Create(ctx, binding)).To(Succeed())
}

// kubectlCourier runs the plugin's command in the test process with the
// manager admin's kubeconfig, and returns what it printed.
func kubectlCourier(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--cache-dir", cacheDir, "--courier-namespace", courier.Namespace}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}
