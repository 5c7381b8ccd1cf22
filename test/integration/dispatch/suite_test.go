package dispatch

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// workerLostTimeout is short so that the lost-worker spec runs in seconds.
const workerLostTimeout = 15 * time.Second

const (
	checkName  = "courier"
	policyName = "all-workers"
	// The spare worker has a check and policy of its own, shared with the
	// first worker, for the specs that break or delete a worker: the
	// Workloads of other specs are not on it.
	spareCheckName  = "spare"
	sparePolicyName = "spare-and-first"
)

var (
	env     *framework.Environment
	courier *framework.Courier
	sim     *kueuesim.Sim
	// spareSim plays Kueue for the spare worker's check.
	spareSim *kueuesim.Sim
	// workerNames are the WorkerCluster names of env.Workers, in order.
	workerNames []string
	// pool are the workers of the main check; spare is the third.
	pool  []*framework.Cluster
	spare *framework.Cluster
)

func TestDispatch(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Dispatch suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{Workers: 3})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	sim = &kueuesim.Sim{Env: env, Check: checkName}
	spareSim = &kueuesim.Sim{Env: env, Check: spareCheckName}
	pool, spare = env.Workers[:2], env.Workers[2]

	courier, err = env.StartCourier(ctx, func(c *configv1alpha1.Configuration) {
		c.WorkerLostTimeout = &metav1.Duration{Duration: workerLostTimeout}
		// The specs are of the Timeout policy, but for those of
		// fenced_test.go, which set a worker's own.
		c.LostWorkerPolicy = courierv1alpha1.LostWorkerTimeout
		c.Fence = suiteFence
		// Courier gives a worker up no sooner than the self-fault window
		// after it counted it out of reach; the fenced specs wait for that,
		// and cut off one worker at a time.
		c.SelfFault = &configv1alpha1.SelfFault{Window: &metav1.Duration{Duration: 5 * time.Second}}
		c.GCInterval = &metav1.Duration{Duration: 5 * time.Second}
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })

	workerNames, err = courier.ConnectWorkers(ctx, env)
	Expect(err).NotTo(HaveOccurred())
	Expect(courier.CreateCheck(ctx, env, checkName, policyName, courierv1alpha1.AllAtOnce, workerNames[:2])).To(Succeed())
	Expect(courier.CreateCheck(ctx, env, spareCheckName, sparePolicyName, courierv1alpha1.AllAtOnce, []string{workerNames[0], workerNames[2]})).To(Succeed())
	expectCheckActive(ctx, checkName, metav1.ConditionTrue, courierv1alpha1.ReasonAdmissionCheckActive)
	expectCheckActive(ctx, spareCheckName, metav1.ConditionTrue, courierv1alpha1.ReasonAdmissionCheckActive)
}, NodeTimeout(framework.StartTimeout))

// Every spec starts with every worker connected.
var _ = BeforeEach(func(ctx context.Context) {
	for _, name := range workerNames {
		Eventually(func(g Gomega) {
			_, err := courier.Cache.Get(name)
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(time.Minute).Should(Succeed())
	}
})

func expectCheckActive(ctx context.Context, name string, status metav1.ConditionStatus, reason string) *kueue.AdmissionCheck {
	ac := &kueue.AdmissionCheck{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, ac)).To(Succeed())
		var cond *metav1.Condition
		for i := range ac.Status.Conditions {
			if ac.Status.Conditions[i].Type == kueue.AdmissionCheckActive {
				cond = &ac.Status.Conditions[i]
			}
		}
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(status), "condition: %+v", cond)
		g.Expect(cond.Reason).To(Equal(reason), "condition: %+v", cond)
	}).Should(Succeed())
	return ac
}

// namespaceEverywhere creates a namespace on the manager and every worker.
func namespaceEverywhere(ctx context.Context) string {
	ns, err := env.NamespaceEverywhere(ctx, "dispatch")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return ns
}
