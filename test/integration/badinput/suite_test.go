// Package badinput gives Courier bad input of every kind it promises an
// answer for (docs/troubleshooting.md) and checks that the answer comes:
// the condition, event or error, with its reason and a message that names
// the object and the fix.
package badinput

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

const (
	checkName  = "courier"
	policyName = "all-workers"
	// unservedKind is configured, but the manager serves TestJob at v1 only.
	unservedKind = "TestJob.v2.example.courier.dev"
)

var (
	env     *framework.Environment
	courier *framework.Courier
	sim     *kueuesim.Sim
	// workerNames are the WorkerCluster names of env.Workers, in order.
	workerNames []string
)

func TestBadInput(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Bad input suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{
		Workers: 2,
		// PlainJob: a kind whose names may be 253 characters long, and
		// whose CRD a spec removes from a worker.
		CRDDirs: []string{"test/integration/frameworks/testdata"},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	sim = &kueuesim.Sim{Env: env, Check: checkName}

	courier, err = env.StartCourier(ctx, func(c *configv1alpha1.Configuration) {
		c.ExternalFrameworks = []configv1alpha1.ExternalFramework{
			{Name: "Job.v1.batch"},
			{Name: "PlainJob.v1.example.courier.dev"},
			{Name: unservedKind},
		}
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })

	workerNames, err = courier.ConnectWorkers(ctx, env)
	Expect(err).NotTo(HaveOccurred())
	Expect(courier.CreateCheck(ctx, env, checkName, policyName, courierv1alpha1.AllAtOnce, workerNames)).To(Succeed())
	expectCheckActive(ctx, checkName, metav1.ConditionTrue, courierv1alpha1.ReasonAdmissionCheckActive)
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

// namespaceEverywhere creates a namespace on the manager and every worker.
func namespaceEverywhere(ctx context.Context) string {
	GinkgoHelper()
	ns, err := env.NamespaceEverywhere(ctx, "badinput")
	Expect(err).NotTo(HaveOccurred())
	return ns
}

// expectCheckActive waits for a Courier AdmissionCheck's Active condition
// and returns the check.
func expectCheckActive(ctx context.Context, name string, status metav1.ConditionStatus, reason string) *kueue.AdmissionCheck {
	GinkgoHelper()
	ac := &kueue.AdmissionCheck{}
	Eventually(func(g Gomega) {
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, ac)).To(Succeed())
		cond := meta.FindStatusCondition(ac.Status.Conditions, kueue.AdmissionCheckActive)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(status), "condition: %+v", cond)
		g.Expect(cond.Reason).To(Equal(reason), "condition: %+v", cond)
	}).Should(Succeed())
	return ac
}

// activeMessage is the message of an AdmissionCheck's Active condition.
func activeMessage(ac *kueue.AdmissionCheck) string {
	return meta.FindStatusCondition(ac.Status.Conditions, kueue.AdmissionCheckActive).Message
}

// eventNotes returns the notes of the events with reason about the object
// of kind and name in namespace ns on the manager ("" for a cluster-scoped
// object, whose events go to "default").
func eventNotes(ctx context.Context, g Gomega, ns, kind, name, reason string) []string {
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	list := &eventsv1.EventList{}
	g.Expect(env.Manager.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// expectWorkloadEvent waits for an event with reason on the manager
// Workload whose note contains every one of parts.
func expectWorkloadEvent(ctx context.Context, wl *kueue.Workload, reason string, parts ...string) {
	GinkgoHelper()
	matchers := make([]types.GomegaMatcher, 0, len(parts))
	for _, p := range parts {
		matchers = append(matchers, ContainSubstring(p))
	}
	Eventually(func(g Gomega) {
		g.Expect(eventNotes(ctx, g, wl.Namespace, "Workload", wl.Name, reason)).To(ContainElement(And(matchers...)))
	}).Should(Succeed())
}

// copiesOn lists the workers that hold a Workload copy of wl now.
func copiesOn(ctx context.Context, g Gomega, wl *kueue.Workload) []string {
	var on []string
	for _, w := range env.Workers {
		if kueuesim.Read(ctx, g, w, wl) != nil {
			on = append(on, w.Name)
		}
	}
	return on
}
