package badinput

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/runtimepatch"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// Without the webhook in this suite, these TrainJobs reach the manager;
// the dispatcher must refuse them itself, for every worker.
var _ = DescribeTable("A TrainJob with RuntimePatches Trainer forbids",
	func(ctx context.Context, patch func(*trainertesting.TrainJobWrapper), want string) {
		ns := namespaceEverywhere(ctx)
		job := trainJob(ns)
		patch(job)
		tj := job.Obj()
		wl := sim.Submit(ctx, tj)
		got := sim.ExpectCheck(ctx, wl, kueue.CheckStateRejected, "TrainJob "+ns+"/"+tj.Name)
		Expect(sim.CheckState(got).Message).To(ContainSubstring(want))
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventRejected, want)
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty())
		}).WithTimeout(2 * time.Second).Should(Succeed())
	},
	Entry("env on the dataset initializer", func(w *trainertesting.TrainJobWrapper) {
		w.ContainerEnv("example.com/user", "dataset-initializer", "TOKEN", "x")
	}, `Trainer forbids env on the "dataset-initializer" container`),
	Entry("env on the model initializer as an init container", func(w *trainertesting.TrainJobWrapper) {
		w.InitContainerEnv("example.com/user", "model-initializer", "TOKEN", "x")
	}, `Trainer forbids env on the "model-initializer" container`),
	Entry("an entry whose manager is not a domain-prefixed path", func(w *trainertesting.TrainJobWrapper) {
		w.RuntimePatch("my-tool", "team", "a")
	}, "spec.runtimePatches[0].manager"),
)

var _ = Describe("A TrainJob already holding 16 RuntimePatches entries", func() {
	It("is rejected when every worker has a runtimePatch of its own, as no worker has room for it", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		patch := trainJob(ns).RuntimePatch("x.io/y", zoneLabel, "any").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec
		for _, name := range workerNames {
			setRuntimePatch(ctx, name, patch)
			DeferCleanup(func(ctx context.Context) { setRuntimePatch(ctx, name, nil) })
		}
		full := trainJob(ns)
		for i := range runtimepatch.MaxEntries {
			full.RuntimePatch("example.com/u"+string(rune('a'+i)), "k", "v")
		}
		tj := full.Obj()
		wl := sim.Submit(ctx, tj)
		got := sim.ExpectCheck(ctx, wl, kueue.CheckStateRejected, "the most Trainer allows")
		for _, w := range workerNames {
			Expect(sim.CheckState(got).Message).To(ContainSubstring(w))
		}
		Expect(sim.CheckState(got).Message).To(ContainSubstring("TrainJob " + ns + "/" + tj.Name))
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventRejected, "the most Trainer allows")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty())
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

// setRuntimePatch sets a WorkerCluster's runtimePatch and waits until
// Courier has validated it.
func setRuntimePatch(ctx context.Context, name string, patch *trainer.TrainingRuntimeSpecPatch) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		wc := &courierv1alpha1.WorkerCluster{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
		wc.Spec.RuntimePatch = patch
		g.Expect(env.Manager.Client.Update(ctx, wc)).To(Succeed())
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		wc := &courierv1alpha1.WorkerCluster{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
		g.Expect(wc.Status.ObservedGeneration).To(Equal(wc.Generation))
	}).Should(Succeed())
}

var _ = Describe("A TrainJob whose ClusterTrainingRuntime is missing on a worker", func() {
	It("is reported, naming the worker and Trainer's refusal, and goes to the other worker", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		without, with := env.Workers[0], env.Workers[1]
		// Trainer's webhook on a worker refuses a TrainJob whose runtime
		// does not exist there, with this message; no Trainer runs here,
		// so a ValidatingAdmissionPolicy says it in its place.
		tj := trainJob(ns).RuntimeRef("missing-runtime").Obj()
		refuseOn(ctx, without, ns, "trainer.kubeflow.org", "trainjobs", `object.spec.runtimeRef.name != "missing-runtime"`,
			`spec.RuntimeRef: Invalid value: clustertrainingruntimes.trainer.kubeflow.org "missing-runtime" not found: specified clusterTrainingRuntime must be created before the TrainJob is created`, tj)
		wl := sim.Submit(ctx, tj)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(without.Name, with.Name)) }).Should(Succeed())

		By("admitting it on the worker without the runtime, whose Trainer refuses the TrainJob")
		kueuesim.AdmitOn(ctx, without, wl)
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventCreateRefused, `Worker "`+without.Name+`"`, "TrainJob "+ns+"/"+tj.Name, "specified clusterTrainingRuntime must be created")

		By("dispatching it to the other worker at once: it never ran, so it is not sent back to Kueue's queue")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(with.Name)) }).Should(Succeed())
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Passed over: "+without.Name+": refused the TrainJob")
		kueuesim.AdmitOn(ctx, with, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, with.Name)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, with, tj)).NotTo(BeNil())
			g.Expect(kueuesim.Read(ctx, g, without, tj)).To(BeNil())
		}).Should(Succeed())
		// The refused dispatch is not announced as one, nor is a Retry.
		Expect(eventNotes(ctx, Default, ns, "Workload", wl.Name, courierv1alpha1.EventDispatched)).
			NotTo(ContainElement(ContainSubstring(without.Name)))
		Expect(eventNotes(ctx, Default, ns, "Workload", wl.Name, courierv1alpha1.EventRemoteEvicted)).To(BeEmpty())
	})
})

var _ = Describe("A worker whose Trainer webhook cannot be called", func() {
	It("reports the failed create and sends the job to the other worker, where it was never retried in place", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		failing, other := env.Workers[0], env.Workers[1]
		// The worker's Trainer is down: its API server cannot call the
		// webhook for TrainJobs, and answers a create with a 500.
		tj := trainJob(ns).Obj()
		failOn(ctx, failing, ns, "trainer.kubeflow.org", "trainjobs", tj)

		wl := sim.Submit(ctx, tj)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ContainElement(failing.Name)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, failing, wl)
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventCreateFailed, `Worker "`+failing.Name+`" failed to create TrainJob `+ns+"/"+tj.Name, "failed calling webhook")

		By("dispatching it to the other worker at once: it never ran, so it is not sent back to Kueue's queue")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(other.Name)) }).Should(Succeed())
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Passed over: "+failing.Name+": failed to create the TrainJob")
		kueuesim.AdmitOn(ctx, other, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, other.Name)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, other, tj)).NotTo(BeNil()) }).Should(Succeed())
		Expect(eventNotes(ctx, Default, ns, "Workload", wl.Name, courierv1alpha1.EventDispatched)).
			NotTo(ContainElement(ContainSubstring(failing.Name)))
		Expect(eventNotes(ctx, Default, ns, "Workload", wl.Name, courierv1alpha1.EventRemoteEvicted)).To(BeEmpty())
	})
})
