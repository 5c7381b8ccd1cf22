// Package plugin runs kubectl courier's commands, in the test process, as
// a user with view rights and no access to Secrets, against a manager and
// two workers with Courier dispatching between them and the test playing
// Kueue.
package plugin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

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

	dir := GinkgoT().TempDir()
	kubeconfig, cacheDir = filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "cache")
	Expect(os.WriteFile(kubeconfig, viewerKubeconfig(ctx), 0o600)).To(Succeed())
}, NodeTimeout(framework.StartTimeout))

// viewerKubeconfig is the kubeconfig of a ServiceAccount that may read
// what a user with the standard view role reads, Courier's viewer roles
// aggregated into it: Courier's APIs, Kueue's Workloads and
// AdmissionChecks, TrainJobs and events; never a Secret.
func viewerKubeconfig(ctx context.Context) []byte {
	GinkgoHelper()
	c := env.Manager.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: courier.Namespace, Name: "viewer"}}
	Expect(c.Create(ctx, sa)).To(Succeed())
	roles := []string{"jobs-viewer"}
	for _, file := range []string{"workercluster_viewer_role.yaml", "dispatchpolicy_viewer_role.yaml"} {
		objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, "config/rbac", file))
		Expect(err).NotTo(HaveOccurred())
		Expect(framework.Apply(ctx, c, objs)).To(Succeed())
		roles = append(roles, objs[0].GetName())
	}
	Expect(c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "jobs-viewer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{kueue.SchemeGroupVersion.Group}, Resources: []string{"workloads", "admissionchecks"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"trainer.kubeflow.org"}, Resources: []string{"trainjobs"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
	}})).To(Succeed())
	for _, role := range roles {
		Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "viewer-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
		})).To(Succeed())
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(c.SubResource("token").Create(ctx, sa, req)).To(Succeed())

	cfg := rest.CopyConfig(env.Manager.Config)
	cfg.BearerToken = req.Status.Token
	viewer, err := client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	err = viewer.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: "any"}, &corev1.Secret{})
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the viewer must not read Secrets, got %v", err)

	kc := clientcmdapi.NewConfig()
	kc.Clusters["manager"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["viewer"] = &clientcmdapi.AuthInfo{Token: req.Status.Token}
	kc.Contexts["manager"] = &clientcmdapi.Context{Cluster: "manager", AuthInfo: "viewer"}
	kc.CurrentContext = "manager"
	data, err := clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// kubectlCourier runs the plugin's command in the test process as the
// viewer, and returns what it printed.
func kubectlCourier(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--cache-dir", cacheDir}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}
