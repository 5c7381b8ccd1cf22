package dispatch

import (
	"context"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// activeCounts watches the manager's TrainJob from resourceVersion rv and
// returns what its mirrored jobsStatus said, in order, each time it
// changed.
func activeCounts(ctx context.Context, tj *trainer.TrainJob, rv string) func() []int32 {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Manager.Config, client.Options{Scheme: env.Manager.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &trainer.TrainJobList{}, client.InNamespace(tj.Namespace),
		client.MatchingFields{"metadata.name": tj.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var mu sync.Mutex
	var seen []int32
	go func() {
		defer GinkgoRecover()
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*trainer.TrainJob)
			if ev.Type != watch.Modified || !ok || len(job.Status.JobsStatus) == 0 {
				continue
			}
			n := ptr.Deref(job.Status.JobsStatus[0].Active, 0)
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != n {
				seen = append(seen, n)
			}
			mu.Unlock()
		}
	}()
	return func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int32(nil), seen...)
	}
}

// endOnWorker completes the job's copy on worker, and its Workload copy
// as the worker's Kueue does, and waits for the end on the manager's job.
func endOnWorker(ctx context.Context, worker *framework.Cluster, tj, remote *trainer.TrainJob, wl *kueue.Workload) {
	GinkgoHelper()
	meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", Message: "done"})
	Expect(worker.Client.Status().Update(ctx, remote)).To(Succeed())
	kueuesim.SetRemoteCondition(ctx, worker, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully"})
	Eventually(func(g Gomega) {
		local := &trainer.TrainJob{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
	}).Should(Succeed())
}

var _ = Describe("Mirroring a dispatched job's status", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("mirrors a burst of status changes in one write, and the job's end", func(ctx context.Context) {
		worker := env.Workers[0]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, worker)
		remote := expectTrainJobOnlyOn(ctx, tj, worker)
		local := &trainer.TrainJob{}
		Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
		seen := activeCounts(ctx, tj, local.ResourceVersion)

		By("resuming the copy and changing its counts five times within statusMirrorDelay (5s)")
		meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobSuspended, Status: metav1.ConditionFalse, Reason: "Resumed", Message: "resumed"})
		setActive := func(n int32) {
			GinkgoHelper()
			remote.Status.JobsStatus = []trainer.JobStatus{{Name: "node", Active: ptr.To(n),
				Ready: ptr.To[int32](0), Succeeded: ptr.To[int32](0), Failed: ptr.To[int32](0), Suspended: ptr.To[int32](0)}}
			Expect(worker.Client.Status().Update(ctx, remote)).To(Succeed())
		}
		for n := int32(1); n <= 5; n++ {
			setActive(n)
		}
		Eventually(seen).Should(ContainElement(int32(5)))
		Expect(seen()).To(Equal([]int32{5}), "the manager's TrainJob showed only the last of the changes")

		By("holding a change of the counts alone for longer than statusMirrorDelay")
		setActive(6)
		Consistently(seen).WithTimeout(8*time.Second).Should(Equal([]int32{5}), "a change of the counts alone waits six times statusMirrorDelay")

		By("mirroring the status that ends the job, then finishing the Workload")
		meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", Message: "done"})
		Expect(worker.Client.Status().Update(ctx, remote)).To(Succeed())
		kueuesim.SetRemoteCondition(ctx, worker, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully"})
		Eventually(func(g Gomega) {
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
			g.Expect(local.Status.JobsStatus).To(ContainElement(HaveField("Active", HaveValue(Equal(int32(6))))), "the end carries the counts held back")
			g.Expect(meta.IsStatusConditionTrue(sim.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)).To(BeTrue())
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	It("leaves finishing the Workload to the manager's Kueue once the job's end is mirrored, then removes the copies", func(ctx context.Context) {
		worker := env.Workers[0]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, worker)
		remote := expectTrainJobOnlyOn(ctx, tj, worker)

		By("ending the job on the worker")
		endOnWorker(ctx, worker, tj, remote, wl)

		By("writing no Finished of Courier's own while the manager's Kueue may still finish it from that status")
		Consistently(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(sim.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)).To(BeFalse())
		}).WithTimeout(5 * time.Second).Should(Succeed())

		By("removing the copies once Kueue finished it, without an event of Courier's")
		kueuesim.UpdateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue,
				Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully"})
		})
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, worker, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, worker, wl)).To(BeNil())
		}).Should(Succeed())
		reasons := eventReasons(ctx, Default, wl)
		Expect(reasons).NotTo(ContainElement(courierv1alpha1.EventFinished))
		Expect(reasons).NotTo(ContainElement(courierv1alpha1.EventRemoteDeleted))
		got := sim.ManagerWorkload(ctx, Default, wl)
		Expect(meta.FindStatusCondition(got.Status.Conditions, kueue.WorkloadFinished).Message).To(Equal("Job finished successfully"), "Kueue's Finished stands")
	})

	// Courier leaves an ended job's Workload to the manager's Kueue while
	// nothing waits for its quota, and writes Finished itself as soon as a
	// ClusterQueue that may take that quota, the Workload's own or one in
	// its cohort, comes to have a Workload waiting and too little room.
	DescribeTable("finishes the Workload itself, once the manager's Kueue is late, only while another Workload waits for its quota",
		func(ctx context.Context, inCohort bool) {
			grace := configv1alpha1.DefaultKueueFinishGrace
			own := kueuetesting.MakeClusterQueue("finish-"+rand.String(5)).Quota("default", corev1.ResourceCPU, "2")
			queues := []*kueue.ClusterQueue{own.Obj()}
			if inCohort {
				cohort := "team-" + rand.String(5)
				own.Cohort(cohort)
				queues = append(queues, kueuetesting.MakeClusterQueue("peer-"+rand.String(5)).Quota("default", corev1.ResourceCPU, "2").Cohort(cohort).Obj())
			}
			waiter := queues[len(queues)-1]
			for _, cq := range queues {
				Expect(env.Manager.Client.Create(ctx, cq)).To(Succeed())
				DeferCleanup(func(ctx context.Context) {
					Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, cq))).To(Succeed())
				})
			}
			worker := env.Workers[0]
			tj := trainJob(ns).Obj()
			wl := sim.SubmitTo(ctx, tj, own.Obj().Name)
			kueuesim.UpdateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) {
				psa := &w.Status.Admission.PodSetAssignments[0]
				psa.Flavors = map[corev1.ResourceName]kueue.ResourceFlavorReference{corev1.ResourceCPU: "default"}
				psa.ResourceUsage = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			})
			expectCopies(ctx, wl, pool...)
			kueuesim.AdmitOn(ctx, worker, wl)
			sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, worker.Name)
			remote := expectTrainJobOnlyOn(ctx, tj, worker)

			By("ending the job on the worker while nothing waits for the quota")
			endOnWorker(ctx, worker, tj, remote, wl)
			Consistently(func(g Gomega) {
				g.Expect(meta.IsStatusConditionTrue(sim.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)).To(BeFalse())
			}).WithTimeout(grace+5*time.Second).Should(Succeed(), "Finished written past the grace while nothing waited for the quota")

			By("writing Finished as soon as a Workload waits in a full ClusterQueue that may take the quota")
			Eventually(func(g Gomega) {
				got := &kueue.ClusterQueue{}
				g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(waiter), got)).To(Succeed())
				got.Status.PendingWorkloads = 1
				got.Status.FlavorsReservation = []kueue.FlavorUsage{{Name: "default", Resources: []kueue.ResourceUsage{{Name: corev1.ResourceCPU, Total: resource.MustParse("2")}}}}
				g.Expect(env.Manager.Client.Status().Update(ctx, got)).To(Succeed())
			}).Should(Succeed())
			Eventually(func(g Gomega) {
				fin := meta.FindStatusCondition(sim.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)
				g.Expect(fin).NotTo(BeNil())
				g.Expect(fin.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(fin.Reason).To(Equal(kueue.WorkloadFinishedReasonSucceeded))
			}).WithTimeout(3*time.Second).Should(Succeed(), "the ClusterQueue's change did not queue the Workload: it waited for a later look")
			Expect(eventReasons(ctx, Default, wl)).NotTo(ContainElement(courierv1alpha1.EventFinished), "a finish Kueue was only late to write has no event")
		},
		Entry("its own ClusterQueue", false),
		Entry("a ClusterQueue in its cohort", true),
	)
})
