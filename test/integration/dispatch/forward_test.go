package dispatch

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// jobEventNotes returns the notes of the events on a manager TrainJob with
// the given reason.
func jobEventNotes(ctx context.Context, g Gomega, tj *trainer.TrainJob, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Manager.Client.List(ctx, list, client.InNamespace(tj.Namespace))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == trainer.TrainJobKind && e.Regarding.Name == tj.Name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// updateManagerJob changes the manager's TrainJob, retrying on conflicts.
func updateManagerJob(ctx context.Context, tj *trainer.TrainJob, change func(*trainertesting.TrainJobWrapper)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		local := kueuesim.Read(ctx, g, env.Manager, tj)
		w := &trainertesting.TrainJobWrapper{TrainJob: *local}
		change(w)
		g.Expect(env.Manager.Client.Update(ctx, w.Obj())).To(Succeed())
	}).Should(Succeed())
}

// updateCopy changes the worker's copy of a TrainJob by hand, as the worker's
// Kueue or a person would.
func updateCopy(ctx context.Context, worker *framework.Cluster, tj *trainer.TrainJob, change func(*trainer.TrainJob)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		remote := kueuesim.Read(ctx, g, worker, tj)
		g.Expect(remote).NotTo(BeNil())
		change(remote)
		g.Expect(worker.Client.Update(ctx, remote)).To(Succeed())
	}).Should(Succeed())
}

func patchManagers(tj *trainer.TrainJob) []string {
	var out []string
	for _, p := range tj.Spec.RuntimePatches {
		out = append(out, p.Manager)
	}
	return out
}

var _ = Describe("Changes after dispatch", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("forwards a RuntimePatch and a label added on the manager to a suspended copy, in one update", func(ctx context.Context) {
		worker := pool[0]
		// Suspended, as the manager's Kueue keeps it until its check is Ready.
		tj := trainJob(ns).Suspend(true).RuntimePatch("example.com/user", "team", "a").Obj()
		dispatchTo(ctx, tj, worker)
		before := expectTrainJobOnlyOn(ctx, tj, worker)
		Expect(before.Spec.Suspend).To(HaveValue(BeTrue()), "the copy waits, suspended, for the worker's Kueue")

		updateManagerJob(ctx, tj, func(w *trainertesting.TrainJobWrapper) {
			w.RuntimePatch("example.com/late", "stage", "two").Label("owner", "b")
		})
		Eventually(func(g Gomega) {
			remote := kueuesim.Read(ctx, g, worker, tj)
			g.Expect(patchManagers(remote)).To(Equal([]string{"example.com/user", "example.com/late"}))
			g.Expect(remote.Labels).To(HaveKeyWithValue("owner", "b"))
			g.Expect(remote.Generation).To(Equal(before.Generation+1), "one spec write carries the change")
			g.Expect(jobEventNotes(ctx, g, tj, courierv1alpha1.EventForwarded)).To(ContainElement(ContainSubstring("spec.runtimePatches")))
		}).Should(Succeed())
	})

	It("reports, and does not forward, a RuntimePatch added while the copy runs", func(ctx context.Context) {
		worker := pool[0]
		tj := trainJob(ns).Obj()
		dispatchTo(ctx, tj, worker)
		expectTrainJobOnlyOn(ctx, tj, worker)
		By("letting the worker start the copy")
		updateCopy(ctx, worker, tj, func(remote *trainer.TrainJob) { remote.Spec.Suspend = ptr.To(false) })
		running := expectTrainJobOnlyOn(ctx, tj, worker)

		updateManagerJob(ctx, tj, func(w *trainertesting.TrainJobWrapper) { w.RuntimePatch("example.com/late", "stage", "two") })
		Eventually(func(g Gomega) {
			g.Expect(jobEventNotes(ctx, g, tj, courierv1alpha1.EventNotForwarded)).To(ContainElement(And(
				ContainSubstring(worker.Name), ContainSubstring("spec.runtimePatches"), ContainSubstring("only while a TrainJob is suspended"))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			remote := kueuesim.Read(ctx, g, worker, tj)
			g.Expect(remote.Spec).To(Equal(running.Spec), "the running copy was changed")
		}).WithTimeout(3 * time.Second).Should(Succeed())
		By("reporting the refusal once, not on every pass")
		Consistently(func(g Gomega) {
			g.Expect(jobEventNotes(ctx, g, tj, courierv1alpha1.EventNotForwarded)).To(HaveLen(1))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("forwards a priority change to the Workload copy", func(ctx context.Context) {
		worker := pool[0]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, worker)

		Eventually(func(g Gomega) {
			local := sim.ManagerWorkload(ctx, g, wl)
			local.Spec.Priority = ptr.To[int32](1000)
			g.Expect(env.Manager.Client.Update(ctx, local)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, worker, wl)
			g.Expect(copy.Spec.Priority).To(HaveValue(Equal(int32(1000))))
		}).Should(Succeed())
	})

	It("reports hand edits on the worker, and sets the manager's values back where the worker allows", func(ctx context.Context) {
		worker := pool[0]
		tj := trainJob(ns).Label("team", "a").Obj()
		dispatchTo(ctx, tj, worker)
		expectTrainJobOnlyOn(ctx, tj, worker)

		updateCopy(ctx, worker, tj, func(remote *trainer.TrainJob) {
			remote.Labels["team"] = "hijacked"
			remote.Spec.RuntimePatches = append(remote.Spec.RuntimePatches, trainer.RuntimePatch{Manager: "example.com/intruder"})
		})
		By("setting the label back, and leaving the RuntimePatches of the running copy, reported")
		Eventually(func(g Gomega) {
			remote := kueuesim.Read(ctx, g, worker, tj)
			g.Expect(remote.Labels).To(HaveKeyWithValue("team", "a"))
			g.Expect(patchManagers(remote)).To(Equal([]string{"example.com/intruder"}))
			notes := jobEventNotes(ctx, g, tj, courierv1alpha1.EventRemoteEdited)
			g.Expect(notes).To(ContainElement(And(ContainSubstring("edited by hand (metadata.labels)"), ContainSubstring("set back"))))
			g.Expect(notes).To(ContainElement(And(ContainSubstring("spec.runtimePatches: edited on the worker by hand"),
				ContainSubstring("only while a TrainJob is suspended"))))
		}).Should(Succeed())
	})

	It("removes the copies of a deactivated workload, and dispatches it again, elsewhere too, once reactivated", func(ctx context.Context) {
		first, second := pool[0], pool[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, first)
		expectTrainJobOnlyOn(ctx, tj, first)

		setActive := func(active bool) {
			Eventually(func(g Gomega) {
				local := sim.ManagerWorkload(ctx, g, wl)
				local.Spec.Active = ptr.To(active)
				g.Expect(env.Manager.Client.Update(ctx, local)).To(Succeed())
			}).Should(Succeed())
		}
		By("deactivating it on the manager")
		setActive(false)
		expectCopies(ctx, wl)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, first, tj)).To(BeNil()) }).Should(Succeed())

		By("reactivating it: Kueue evicted it meanwhile, and admits it again")
		sim.EvictAndRequeue(ctx, wl)
		setActive(true)
		sim.ReserveQuota(ctx, wl)
		expectCopies(ctx, wl, first, second)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)
	})
})
