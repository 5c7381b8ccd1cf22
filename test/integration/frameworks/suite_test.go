package frameworks

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

const checkName = "courier"

var (
	env     *framework.Environment
	courier *framework.Courier
	sim     *kueuesim.Sim
)

func TestFrameworks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "External frameworks suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{
		Workers: 2,
		CRDDirs: []string{"test/integration/frameworks/testdata"},
		// Native gang scheduling (KEP-4671) is alpha in Kubernetes 1.36; the
		// second worker goes without it.
		APIServerArgs:        []string{"--runtime-config=scheduling.k8s.io/v1alpha2=true", "--feature-gates=GenericWorkload=true"},
		ClusterAPIServerArgs: map[string][]string{"worker-2": {"--runtime-config=scheduling.k8s.io/v1alpha2=false", "--feature-gates=GenericWorkload=false"}},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	sim = &kueuesim.Sim{Env: env, Check: checkName}

	By("removing the TestJob CRD from the second worker")
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "testjobs.example.courier.dev"}}
	Expect(env.Workers[1].Client.Delete(ctx, crd)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(env.Workers[1].Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)).NotTo(Succeed())
	}).Should(Succeed())

	courier, err = env.StartCourier(ctx, func(c *configv1alpha1.Configuration) {
		c.ExternalFrameworks = []configv1alpha1.ExternalFramework{
			{Name: "Job.v1.batch", ForwardedSpecPaths: []string{"spec.parallelism"}},
			{Name: "JobSet.v1alpha2.jobset.x-k8s.io"},
			{
				Name:      "TestJob.v1.example.courier.dev",
				ManagedBy: &configv1alpha1.ManagedBy{Path: "spec.runPolicy.managedBy", Value: "example.courier.dev/courier"},
				Status:    &configv1alpha1.StatusSync{Fields: []string{"conditions", "phase"}},
			},
			{Name: "PlainJob.v1.example.courier.dev"},
			{Name: "Missing.v1.example.courier.dev"},
		}
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })

	names, err := courier.ConnectWorkers(ctx, env)
	Expect(err).NotTo(HaveOccurred())
	Expect(courier.CreateCheck(ctx, env, checkName, "all", courierv1alpha1.AllAtOnce, names)).To(Succeed())
}, NodeTimeout(framework.StartTimeout))
