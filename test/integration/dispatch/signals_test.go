package dispatch

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// stillRunsOn asserts for a while that the job and its Workload copy stay
// on worker, untouched.
func stillRunsOn(ctx context.Context, tj *trainer.TrainJob, wl *kueue.Workload, worker *framework.Cluster) {
	GinkgoHelper()
	job := kueuesim.Read(ctx, Default, worker, tj)
	Expect(job).NotTo(BeNil())
	Consistently(func(g Gomega) {
		got := kueuesim.Read(ctx, g, worker, tj)
		g.Expect(got).NotTo(BeNil(), "the TrainJob on %s", worker.Name)
		g.Expect(got.DeletionTimestamp).To(BeNil())
		g.Expect(got.Spec).To(Equal(job.Spec), "the running TrainJob was changed")
		copy := kueuesim.Read(ctx, g, worker, wl)
		g.Expect(copy).NotTo(BeNil(), "the Workload copy on %s", worker.Name)
		g.Expect(copy.DeletionTimestamp).To(BeNil())
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

var _ = Describe("Only manager-side signals end remote work", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("keeps a placed job running, mirrored and reported on, when its AdmissionCheck is deleted", func(ctx context.Context) {
		name := "doomed-" + rand.String(4)
		Expect(courier.CreateCheck(ctx, env, name, name, courierv1alpha1.AllAtOnce, workerNames[:2])).To(Succeed())
		expectCheckActive(ctx, name, metav1.ConditionTrue, courierv1alpha1.ReasonAdmissionCheckActive)
		doomed := &kueuesim.Sim{Env: env, Check: kueue.AdmissionCheckReference(name)}
		worker := pool[0]
		tj := trainJob(ns).Obj()
		wl := doomed.Submit(ctx, tj)
		expectCopies(ctx, wl, pool...)
		kueuesim.AdmitOn(ctx, worker, wl)
		doomed.ExpectCheck(ctx, wl, kueue.CheckStateReady, worker.Name)
		expectTrainJobOnlyOn(ctx, tj, worker)

		By("deleting the AdmissionCheck, as an install tool replacing it would")
		Expect(env.Manager.Client.Delete(ctx, &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		doomed.ExpectCheck(ctx, wl, kueue.CheckStateReady, `AdmissionCheck "`+name+`" no longer exists`)
		stillRunsOn(ctx, tj, wl, worker)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventCheckMissing))
		}).Should(Succeed())

		By("mirroring its status and finishing it all the same")
		remote := expectTrainJobOnlyOn(ctx, tj, worker)
		meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", Message: "done"})
		Expect(worker.Client.Status().Update(ctx, remote)).To(Succeed())
		kueuesim.SetRemoteCondition(ctx, worker, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "done"})
		Eventually(func(g Gomega) {
			g.Expect(isTrueOn(doomed.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)).To(BeTrue())
			local := kueuesim.Read(ctx, g, env.Manager, tj)
			g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
			g.Expect(kueuesim.Read(ctx, g, worker, tj)).To(BeNil())
		}).Should(Succeed())
	})

	It("reports, and does not stop, a job changed after dispatch in a way its worker would refuse", func(ctx context.Context) {
		worker := pool[0]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, worker)
		expectTrainJobOnlyOn(ctx, tj, worker)

		By("adding a RuntimePatch that Trainer forbids to the manager's TrainJob")
		Eventually(func(g Gomega) {
			local := kueuesim.Read(ctx, g, env.Manager, tj)
			changed := (&trainertesting.TrainJobWrapper{TrainJob: *local}).NodeEnv("example.com/late", "LR", "0.1").Obj()
			g.Expect(env.Manager.Client.Update(ctx, changed)).To(Succeed())
		}).Should(Succeed())
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, "The job changed after dispatch in a way its worker would refuse")
		stillRunsOn(ctx, tj, wl, worker)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventNotForwarded))
		}).Should(Succeed())
	})

	It("dispatches only once every other admission check is Ready", func(ctx context.Context) {
		tj := trainJob(ns).Obj()
		wl := sim.SubmitTo(ctx, tj, "cq", "approval")
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Waiting for the admission checks approval to be Ready")
		Consistently(func(g Gomega) {
			for _, w := range env.Workers {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).To(BeNil(), "a copy on %s", w.Name)
			}
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("approving it")
		kueuesim.UpdateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) { kueuesim.SetCheck(w, "approval", kueue.CheckStateReady, "approved") })
		expectCopies(ctx, wl, pool...)
		kueuesim.AdmitOn(ctx, pool[1], wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[1].Name)
		expectTrainJobOnlyOn(ctx, tj, pool[1])
	})
})

func isTrueOn(conds []metav1.Condition, t string) bool { return meta.IsStatusConditionTrue(conds, t) }
