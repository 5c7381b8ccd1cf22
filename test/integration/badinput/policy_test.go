package badinput

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// zoneLabel is the WorkerCluster label the policies' expressions read.
const zoneLabel = "example.com/zone"

// trainJob is a TrainJob Courier dispatches, queued in "lq".
func trainJob(ns string) *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob("tj-"+rand.String(5), ns).ManagedBy(adapter.TrainJobManagedBy).Queue("lq")
}

// policyCheck creates a DispatchPolicy over both workers with spec, and a
// Courier AdmissionCheck that names it; it returns a Sim for the check.
// Without the webhook in this suite, any spec reaches the controller.
func policyCheck(ctx context.Context, spec courierv1alpha1.DispatchPolicySpec) (*kueuesim.Sim, string) {
	GinkgoHelper()
	name := "policy-" + rand.String(5)
	if spec.ClusterSelector == nil {
		spec.Clusters = workerNames
	}
	Expect(env.Manager.Client.Create(ctx, &courierv1alpha1.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})).To(Succeed())
	Expect(env.Manager.Client.Create(ctx, framework.AdmissionCheck(name, name))).To(Succeed())
	return &kueuesim.Sim{Env: env, Check: kueue.AdmissionCheckReference(name)}, name
}

// labelWorker sets (or, with "", removes) the zone label of a worker's
// WorkerCluster, and removes it again when the spec ends.
func labelWorker(ctx context.Context, name, zone string) {
	GinkgoHelper()
	set := func(ctx context.Context, zone string) {
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
			if zone == "" {
				delete(wc.Labels, zoneLabel)
			} else {
				if wc.Labels == nil {
					wc.Labels = map[string]string{}
				}
				wc.Labels[zoneLabel] = zone
			}
			g.Expect(env.Manager.Client.Update(ctx, wc)).To(Succeed())
		}).Should(Succeed())
	}
	set(ctx, zone)
	DeferCleanup(func(ctx context.Context) { set(ctx, "") })
}

var _ = DescribeTable("A DispatchPolicy whose CEL does not compile",
	func(ctx context.Context, spec courierv1alpha1.DispatchPolicySpec, want string) {
		_, name := policyCheck(ctx, spec)
		Eventually(func(g Gomega) {
			policy := &courierv1alpha1.DispatchPolicy{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, policy)).To(Succeed())
			valid := meta.FindStatusCondition(policy.Status.Conditions, courierv1alpha1.DispatchPolicyValid)
			g.Expect(valid).NotTo(BeNil())
			g.Expect(valid.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(valid.Reason).To(Equal(courierv1alpha1.ReasonInvalidExpression))
			g.Expect(valid.Message).To(And(ContainSubstring(want), ContainSubstring("Fix the expression")))
			g.Expect(eventNotes(ctx, g, "", "DispatchPolicy", name, courierv1alpha1.ReasonInvalidExpression)).To(ContainElement(ContainSubstring(want)))
		}).Should(Succeed())
		ac := expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonPolicyInvalid)
		Expect(activeMessage(ac)).To(And(ContainSubstring(`DispatchPolicy "`+name+`" is not valid`), ContainSubstring(want)))
	},
	Entry("a score with a syntax error", courierv1alpha1.DispatchPolicySpec{Score: `cluster.labels[`},
		"score: "),
	Entry("a filter that gives an int", courierv1alpha1.DispatchPolicySpec{Filter: `1 + 1`},
		"filter: gives int, want bool"),
	Entry("a score that gives a string", courierv1alpha1.DispatchPolicySpec{Score: `"high"`},
		"score: gives string, want int, uint or double"),
	Entry("a filter on an undeclared variable", courierv1alpha1.DispatchPolicySpec{Filter: `node.name == "a"`},
		"undeclared reference to 'node'"),
)

var _ = Describe("A DispatchPolicy whose CEL fails at run time", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("makes the worker it fails on not eligible, with a PlacementError event, and uses the other", func(ctx context.Context) {
		west, unlabelled := env.Workers[0], env.Workers[1]
		labelWorker(ctx, west.Name, "west")
		check, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce,
			Filter: `cluster.labels["` + zoneLabel + `"] == "west"`})
		wl := check.Submit(ctx, trainJob(ns).Obj())
		check.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Waiting for a nominated worker to admit the workload")
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventPlacementError, `Cluster "`+unlabelled.Name+`" is not eligible`, "no such key")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(west.Name))
		}).WithTimeout(2 * time.Second).Should(Succeed())
		kueuesim.AdmitOn(ctx, west, wl)
		check.ExpectCheck(ctx, wl, kueue.CheckStateReady, west.Name)
	})

	It("holds the workload when it fails on every worker, saying why for each", func(ctx context.Context) {
		check, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Filter: `object.metadata.name`})
		wl := check.Submit(ctx, trainJob(ns).Obj())
		for _, w := range env.Workers {
			check.ExpectCheck(ctx, wl, kueue.CheckStatePending, w.Name)
			expectWorkloadEvent(ctx, wl, courierv1alpha1.EventPlacementError, `Cluster "`+w.Name+`" is not eligible`, "gave string, want bool")
		}
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty())
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("makes a worker whose score fails not eligible", func(ctx context.Context) {
		weighted, unweighted := env.Workers[0], env.Workers[1]
		labelWorker(ctx, weighted.Name, "7")
		check, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce,
			Score: `cluster.labels["` + zoneLabel + `"] == "7" ? 7 : 0`})
		wl := check.Submit(ctx, trainJob(ns).Obj())
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventPlacementError, `Cluster "`+unweighted.Name+`" is not eligible`)
		// The first pass may predate the label in Courier's cache.
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(weighted.Name)) }).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(weighted.Name))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

var _ = Describe("An AdmissionCheck with bad parameters", func() {
	It("is inactive with InvalidParameters when it names no DispatchPolicy", func(ctx context.Context) {
		name := "no-params-" + rand.String(4)
		ac := framework.AdmissionCheck(name, "")
		ac.Spec.Parameters = nil
		Expect(env.Manager.Client.Create(ctx, ac)).To(Succeed())
		got := expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonInvalidParameters)
		Expect(activeMessage(got)).To(ContainSubstring(`AdmissionCheck "` + name + `" must set parameters to {apiGroup: courier.dev, kind: DispatchPolicy, name: <policy>}`))
	})

	It("is inactive with InvalidParameters when its parameters name another kind", func(ctx context.Context) {
		name := "other-params-" + rand.String(4)
		ac := framework.AdmissionCheck(name, policyName)
		ac.Spec.Parameters.APIGroup, ac.Spec.Parameters.Kind = "example.com", "Settings"
		Expect(env.Manager.Client.Create(ctx, ac)).To(Succeed())
		got := expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonInvalidParameters)
		Expect(activeMessage(got)).To(ContainSubstring(`AdmissionCheck "` + name + `" must set parameters`))
	})

	It("is inactive when its DispatchPolicy's clusterSelector is invalid, and holds the workload with Misconfigured", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		check, name := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{ClusterSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: zoneLabel, Operator: "Near", Values: []string{"west"}}},
		}})
		got := expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonInvalidParameters)
		Expect(activeMessage(got)).To(ContainSubstring(`DispatchPolicy "` + name + `" has an invalid clusterSelector`))
		wl := check.Submit(ctx, trainJob(ns).Obj())
		check.ExpectCheck(ctx, wl, kueue.CheckStatePending, "clusterSelector")
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventMisconfigured, name, "clusterSelector")
	})
})
