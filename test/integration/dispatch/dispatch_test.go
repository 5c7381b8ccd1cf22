package dispatch

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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

func trainJob(ns string) *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob("tj-"+rand.String(5), ns).ManagedBy(adapter.TrainJobManagedBy).Queue("lq")
}

// expectCopies waits until the Workload has a copy exactly on the listed
// workers.
func expectCopies(ctx context.Context, wl *kueue.Workload, on ...*framework.Cluster) {
	EventuallyWithOffset(1, func(g Gomega) {
		for _, w := range env.Workers {
			copy := kueuesim.Read(ctx, g, w, wl)
			if containsCluster(on, w) {
				g.Expect(copy).NotTo(BeNil(), "a copy on %s", w.Name)
				g.Expect(copy.Labels).To(HaveKeyWithValue(courierv1alpha1.OriginLabel, courier.Config.Origin))
			} else {
				g.Expect(copy).To(BeNil(), "no copy on %s", w.Name)
			}
		}
	}).Should(Succeed())
}

// expectTrainJobOnlyOn waits until the TrainJob exists on exactly one
// worker, and returns it.
func expectTrainJobOnlyOn(ctx context.Context, tj *trainer.TrainJob, on *framework.Cluster) *trainer.TrainJob {
	var got *trainer.TrainJob
	EventuallyWithOffset(1, func(g Gomega) {
		for _, w := range env.Workers {
			remote := kueuesim.Read(ctx, g, w, tj)
			if w == on {
				g.Expect(remote).NotTo(BeNil(), "the TrainJob on %s", w.Name)
				got = remote
			} else {
				g.Expect(remote).To(BeNil(), "no TrainJob on %s", w.Name)
			}
		}
	}).Should(Succeed())
	return got
}

func containsCluster(list []*framework.Cluster, c *framework.Cluster) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// dispatchTo submits tj and lets worker admit it; it returns the manager
// Workload once the check is Ready.
func dispatchTo(ctx context.Context, tj *trainer.TrainJob, worker *framework.Cluster) *kueue.Workload {
	wl := sim.Submit(ctx, tj)
	expectCopies(ctx, wl, pool...)
	kueuesim.AdmitOn(ctx, worker, wl)
	sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, worker.Name)
	return wl
}

var _ = Describe("Dispatching a TrainJob", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("runs it on the worker that admits it and mirrors status back until it finishes", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).RuntimePatch("example.com/user", "team", "a").Obj()
		wl := sim.Submit(ctx, tj)

		By("copying the Workload to both workers and nominating them")
		expectCopies(ctx, wl, first, second)
		got := sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Waiting for a nominated worker to admit the workload")
		Expect(got.Status.NominatedClusterNames).To(ConsistOf(first.Name, second.Name))
		copy := &kueue.Workload{}
		Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(wl), copy)).To(Succeed())
		Expect(copy.Spec.PodSets).To(Equal(wl.Spec.PodSets))
		Expect(copy.Spec.QueueName).To(Equal(wl.Spec.QueueName))
		Expect(copy.OwnerReferences).To(BeEmpty())

		By("creating the TrainJob on the worker that admitted it, and removing the other copy")
		kueuesim.AdmitOn(ctx, second, wl)
		got = sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, `Dispatched to worker "`+second.Name+`"`)
		Expect(got.Status.ClusterName).To(HaveValue(Equal(second.Name)))
		Expect(got.Status.NominatedClusterNames).To(BeEmpty())
		remote := expectTrainJobOnlyOn(ctx, tj, second)
		expectCopies(ctx, wl, second)
		// Without managedBy, Trainer's CRD defaults it to Trainer's own
		// controller, which is what runs the job on the worker.
		Expect(remote.Spec.ManagedBy).To(HaveValue(Equal("trainer.kubeflow.org/trainjob-controller")))
		Expect(remote.Labels).To(HaveKeyWithValue(courierv1alpha1.OriginLabel, courier.Config.Origin))
		Expect(remote.Labels).To(HaveKeyWithValue(adapter.PrebuiltWorkloadLabel, wl.Name))
		Expect(remote.OwnerReferences).To(BeEmpty())
		Expect(remote.Spec.RuntimeRef).To(Equal(tj.Spec.RuntimeRef))

		By("mirroring the worker's TrainJob status to the manager")
		remote.Status.Conditions = []metav1.Condition{{Type: "Created", Status: metav1.ConditionTrue, Reason: "JobsCreated", Message: "JobSet created", LastTransitionTime: metav1.Now()}}
		Expect(second.Client.Status().Update(ctx, remote)).To(Succeed())
		Eventually(func(g Gomega) {
			local := &trainer.TrainJob{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, "Created")).To(BeTrue())
		}).Should(Succeed())

		By("finishing the manager Workload when the worker's does, with the final status first")
		remote = expectTrainJobOnlyOn(ctx, tj, second)
		meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", Message: "done"})
		Expect(second.Client.Status().Update(ctx, remote)).To(Succeed())
		kueuesim.SetRemoteCondition(ctx, second, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully"})
		Eventually(func(g Gomega) {
			got := sim.ManagerWorkload(ctx, g, wl)
			fin := meta.FindStatusCondition(got.Status.Conditions, kueue.WorkloadFinished)
			g.Expect(fin).NotTo(BeNil())
			g.Expect(fin.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(fin.Reason).To(Equal(kueue.WorkloadFinishedReasonSucceeded))
			g.Expect(fin.Message).To(Equal("Job finished successfully"))
			g.Expect(sim.CheckState(got).State).To(Equal(kueue.CheckStateReady))
			local := &trainer.TrainJob{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
		}).Should(Succeed())

		By("removing the worker's objects once the final status is on the manager")
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, second, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, second, wl)).To(BeNil())
		}).Should(Succeed())

		By("never dispatching the finished workload again")
		Consistently(func(g Gomega) {
			for _, w := range env.Workers {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).To(BeNil())
			}
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("recording an event for the dispatch, none for the first nomination, the finish the manager's Kueue was slow to write, or the routine removals")
		Eventually(func(g Gomega) {
			reasons := eventReasons(ctx, g, wl)
			g.Expect(reasons).To(ContainElement(courierv1alpha1.EventDispatched))
			g.Expect(reasons).NotTo(ContainElement(courierv1alpha1.EventFinished))
			g.Expect(reasons).NotTo(ContainElement(courierv1alpha1.EventNominated))
			g.Expect(reasons).NotTo(ContainElement(courierv1alpha1.EventRemoteDeleted))
		}).Should(Succeed())
	})

	It("copies user and third-party RuntimePatches unchanged, and not the manager-side Kueue entry", func(ctx context.Context) {
		tj := trainJob(ns).
			RuntimePatch("example.com/user", "team", "a").
			RuntimePatch("kueue.x-k8s.io/manager", "kueue", "manager-side").
			RuntimePatch("vendor.io/tuner", "tuned", "yes").Obj()
		dispatchTo(ctx, tj, env.Workers[0])
		remote := expectTrainJobOnlyOn(ctx, tj, env.Workers[0])

		local := &trainer.TrainJob{}
		Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
		Expect(remote.Spec.RuntimePatches).To(HaveLen(2))
		Expect(remote.Spec.RuntimePatches[0]).To(Equal(local.Spec.RuntimePatches[0]))
		Expect(remote.Spec.RuntimePatches[1]).To(Equal(local.Spec.RuntimePatches[2]))
		for _, p := range remote.Spec.RuntimePatches {
			Expect(p.Manager).NotTo(Equal("kueue.x-k8s.io/manager"))
		}
	})

	It("creates exactly one TrainJob when both workers admit at once", func(ctx context.Context) {
		tj := trainJob(ns).Obj()
		wl := sim.Submit(ctx, tj)
		expectCopies(ctx, wl, pool...)
		// Courier waits while its check is in Retry, so both workers can
		// admit before it looks again: then it sees both admitted at once.
		kueuesim.UpdateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) { sim.SetCheck(w, kueue.CheckStateRetry, "held by the test") })
		kueuesim.AdmitOn(ctx, env.Workers[0], wl)
		kueuesim.AdmitOn(ctx, env.Workers[1], wl)
		kueuesim.UpdateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) { sim.SetCheck(w, kueue.CheckStatePending, "") })

		got := sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, "Dispatched to worker")
		winner := env.Workers[0]
		if *got.Status.ClusterName == env.Workers[1].Name {
			winner = env.Workers[1]
		}
		expectTrainJobOnlyOn(ctx, tj, winner)
		expectCopies(ctx, wl, winner)
		Consistently(func(g Gomega) {
			count := 0
			for _, w := range env.Workers {
				if kueuesim.Read(ctx, g, w, tj) != nil {
					count++
				}
			}
			g.Expect(count).To(Equal(1))
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("dispatches again, to the other worker, when the worker evicts the workload", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, first)
		remote := expectTrainJobOnlyOn(ctx, tj, first)
		remote.Status.Conditions = []metav1.Condition{{Type: "Created", Status: metav1.ConditionTrue, Reason: "JobsCreated", Message: "JobSet created", LastTransitionTime: metav1.Now()}}
		Expect(first.Client.Status().Update(ctx, remote)).To(Succeed())
		Eventually(func(g Gomega) {
			local := kueuesim.Read(ctx, g, env.Manager, tj)
			g.Expect(local).NotTo(BeNil())
			g.Expect(local.Status.Conditions).NotTo(BeEmpty())
		}).Should(Succeed())

		kueuesim.SetRemoteCondition(ctx, first, wl, metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted", Message: "preempted by a higher priority workload"})
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, `Worker "`+first.Name+`" evicted the workload (Preempted`)

		By("removing the copies once the manager's Kueue evicts, and dispatching again when it requeues")
		sim.EvictAndRequeue(ctx, wl)
		expectCopies(ctx, wl)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, first, tj)).To(BeNil()) }).Should(Succeed())
		sim.ReserveQuota(ctx, wl)
		expectCopies(ctx, wl, first, second)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)

		By("mirroring the new copy's empty status: the first worker's is not kept")
		Eventually(func(g Gomega) {
			local := kueuesim.Read(ctx, g, env.Manager, tj)
			g.Expect(local).NotTo(BeNil())
			g.Expect(local.Status).To(BeZero())
		}).Should(Succeed())
	})

	It("dispatches again only once the earlier job copy has disappeared from its worker", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, first)
		expectTrainJobOnlyOn(ctx, tj, first)

		By("holding the copy with a finalizer, as a worker whose controllers are down holds a copy deleted in the foreground")
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, first, tj)
			g.Expect(copy).NotTo(BeNil())
			copy.Finalizers = append(copy.Finalizers, "test.courier.dev/hold")
			g.Expect(first.Client.Update(ctx, copy)).To(Succeed())
		}).Should(Succeed())

		By("evicting it on the manager: the copy is deleted, and while it is there the job goes nowhere else")
		sim.EvictAndRequeue(ctx, wl)
		sim.ReserveQuota(ctx, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, `Removing the copies an earlier admission left on worker "`+first.Name+`"`)
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, first, tj)
			g.Expect(copy).NotTo(BeNil())
			g.Expect(copy.DeletionTimestamp).NotTo(BeNil())
		}).Should(Succeed())
		By("naming what holds the copy in the check's message")
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "TrainJob "+tj.Namespace+"/"+tj.Name+" has been deleting since ")
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "held by the finalizers test.courier.dev/hold; if no controller on the worker removes them, remove them there by hand.")
		expectNothingOn(ctx, second, wl, tj, 3*time.Second)

		By("dispatching it again once the copy is gone")
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, first, tj)
			g.Expect(copy).NotTo(BeNil())
			copy.Finalizers = nil
			g.Expect(first.Client.Update(ctx, copy)).To(Succeed())
		}).Should(Succeed())
		expectCopies(ctx, wl, first, second)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)
	})

	It("removes the worker's objects when the job is deleted on the manager", func(ctx context.Context) {
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, env.Workers[0])
		expectTrainJobOnlyOn(ctx, tj, env.Workers[0])

		// Delete the job and its Workload as the manager's garbage
		// collector would, whichever comes first.
		Expect(env.Manager.Client.Delete(ctx, tj)).To(Succeed())
		// The manager's garbage collector may delete the owned Workload first.
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wl))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, env.Workers[0], tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, env.Workers[0], wl)).To(BeNil())
		}).Should(Succeed())
	})

	It("removes the worker's objects when the manager evicts the workload", func(ctx context.Context) {
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, env.Workers[0])
		expectTrainJobOnlyOn(ctx, tj, env.Workers[0])
		sim.EvictAndRequeue(ctx, wl)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, env.Workers[0], tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, env.Workers[0], wl)).To(BeNil())
		}).Should(Succeed())
	})

	It("rejects a TrainJob whose managedBy would let the manager run it too", func(ctx context.Context) {
		tj := trainertesting.MakeTrainJob("tj-"+rand.String(5), ns).Queue("lq").Obj()
		wl := sim.Submit(ctx, tj)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRejected, `set it to "kueue.x-k8s.io/multikueue"`)
		for _, w := range env.Workers {
			Expect(kueuesim.Read(ctx, Default, w, wl)).To(BeNil())
		}
	})

	It("rejects RuntimePatches that the worker's Trainer would refuse", func(ctx context.Context) {
		tj := trainJob(ns).NodeEnv("example.com/user", "LR", "0.1").Obj()
		wl := sim.Submit(ctx, tj)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRejected, `Trainer forbids env on the "node" container`)
	})

	It("leaves a same-name object it does not own untouched and passes its worker over", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		foreign := &kueue.Workload{}
		foreign.Name, foreign.Namespace = "trainjob-"+tj.Name, ns
		foreign.Labels = map[string]string{"owner": "someone-else"}
		foreign.Spec = *kueueWorkloadSpec()
		Expect(first.Client.Create(ctx, foreign)).To(Succeed())

		wl := sim.Submit(ctx, tj)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Courier did not create")
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, second, wl)).NotTo(BeNil()) }).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventForeignObject))
		}).Should(Succeed())

		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)

		got := &kueue.Workload{}
		Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(foreign), got)).To(Succeed())
		Expect(got.ResourceVersion).To(Equal(foreign.ResourceVersion), "the foreign Workload was modified")
		Expect(got.DeletionTimestamp).To(BeNil())
	})

	// The job's name is taken on the worker that admitted it: the job never
	// ran there, so it goes to another worker at once, not through a Retry
	// and Kueue's requeue backoff.
	It("sends the job to another worker at once when the worker that admitted it holds a foreign job of its name", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		foreign := trainertesting.MakeTrainJob(tj.Name, ns).Label("owner", "someone-else").Obj()
		Expect(first.Client.Create(ctx, foreign)).To(Succeed())

		wl := sim.Submit(ctx, tj)
		expectCopies(ctx, wl, first, second)
		kueuesim.AdmitOn(ctx, first, wl)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventForeignObject))
		}).Should(Succeed())
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Passed over: "+first.Name+": holds a TrainJob Courier did not create")
		expectCopies(ctx, wl, second)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, second, tj)).NotTo(BeNil()) }).Should(Succeed())
		Expect(eventReasons(ctx, Default, wl)).NotTo(ContainElement(courierv1alpha1.EventRemoteEvicted), "sent back to Kueue with a Retry")

		got := &trainer.TrainJob{}
		Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(foreign), got)).To(Succeed())
		Expect(got.UID).To(Equal(foreign.UID))
		Expect(got.Labels).NotTo(HaveKey(courierv1alpha1.OriginLabel), "the foreign TrainJob was modified")
	})

	It("reports a namespace missing on a worker and uses the other", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		managerNS, err := env.Manager.CreateNamespace(ctx, "only-second")
		Expect(err).NotTo(HaveOccurred())
		ns := managerNS.Name
		Expect(second.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		tj := trainJob(ns).Obj()
		wl := sim.Submit(ctx, tj)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, first.Name+`: namespace "`+ns+`" does not exist there`)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
	})
})

var _ = Describe("Garbage collection", func() {
	It("deletes a copy whose manager Workload does not exist, and leaves unlabelled objects alone", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		worker := env.Workers[0]
		orphan := &kueue.Workload{}
		orphan.Name, orphan.Namespace = "orphan", ns
		orphan.Labels = map[string]string{courierv1alpha1.OriginLabel: courier.Config.Origin}
		orphan.Finalizers = []string{courierv1alpha1.RemoteFinalizer}
		orphan.Spec = *kueueWorkloadSpec()
		Expect(worker.Client.Create(ctx, orphan)).To(Succeed())
		bystander := &kueue.Workload{}
		bystander.Name, bystander.Namespace = "bystander", ns
		bystander.Spec = *kueueWorkloadSpec()
		Expect(worker.Client.Create(ctx, bystander)).To(Succeed())

		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, worker, orphan)).To(BeNil()) }).Should(Succeed())
		Consistently(func(g Gomega) {
			got := kueuesim.Read(ctx, g, worker, bystander)
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.ResourceVersion).To(Equal(bystander.ResourceVersion))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

var _ = Describe("A lost worker", Ordered, func() {
	It("gets the job dispatched elsewhere after workerLostTimeout, and its stale copies removed when it returns", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, second)
		expectTrainJobOnlyOn(ctx, tj, second)

		// kube-apiserver stops answering /readyz as soon as it starts its
		// graceful shutdown: the loss begins before the process exits.
		start := time.Now()
		Expect(second.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			if !second.APIServerRunning() {
				Expect(second.StartAPIServer(ctx)).To(Succeed())
			}
		})
		// The loss counts from the stop's start, and the API server may take
		// seconds to exit: the check stays Ready until nearly
		// workerLostTimeout after start, whenever the stop returned.
		Consistently(func(g Gomega) {
			g.Expect(sim.CheckState(sim.ManagerWorkload(ctx, g, wl)).State).To(Equal(kueue.CheckStateReady))
		}).WithTimeout(max(time.Until(start.Add(workerLostTimeout-2*time.Second)), time.Second/2)).Should(Succeed(), "a short loss must not re-dispatch")
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, "unreachable since")
		// disconnectedSince is stored with one-second precision.
		Expect(time.Since(start)).To(BeNumerically(">=", workerLostTimeout-time.Second))

		sim.EvictAndRequeue(ctx, wl)
		sim.ReserveQuota(ctx, wl)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, first, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, first, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, first.Name)

		By("removing the stale copies once the lost worker is back")
		Expect(second.StartAPIServer(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, second, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, second, wl)).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		expectTrainJobOnlyOn(ctx, tj, first)
	})
})

var _ = Describe("The AdmissionCheck", func() {
	It("is inactive while its DispatchPolicy does not exist", func(ctx context.Context) {
		name := "missing-policy-" + rand.String(4)
		Expect(env.Manager.Client.Create(ctx, framework.AdmissionCheck(name, "no-such-policy"))).To(Succeed())
		ac := expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonPolicyNotFound)
		Expect(ac.Status.Conditions[0].Message).To(ContainSubstring(`"no-such-policy"`))
	})

	It("is inactive while none of its clusters is Active", func(ctx context.Context) {
		policy := &courierv1alpha1.DispatchPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "nowhere-" + rand.String(4)},
			Spec:       courierv1alpha1.DispatchPolicySpec{Clusters: []string{"no-such-worker"}},
		}
		Expect(env.Manager.Client.Create(ctx, policy)).To(Succeed())
		name := "inactive-" + rand.String(4)
		Expect(env.Manager.Client.Create(ctx, framework.AdmissionCheck(name, policy.Name))).To(Succeed())
		expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonNoActiveClusters)

		By("turning active when the policy selects an Active cluster by label")
		Eventually(func(g Gomega) {
			// Courier writes the policy's status meanwhile: update what is there now.
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
			policy.Spec.ClusterSelector = &metav1.LabelSelector{}
			g.Expect(env.Manager.Client.Update(ctx, policy)).To(Succeed())
		}).Should(Succeed())
		expectCheckActive(ctx, name, metav1.ConditionTrue, courierv1alpha1.ReasonAdmissionCheckActive)
	})

	It("reports a ClusterQueue that also runs MultiKueue's check, and does not dispatch there", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		mk := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "multikueue-" + rand.String(4)},
			Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName}}
		Expect(env.Manager.Client.Create(ctx, mk)).To(Succeed())
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "both-" + rand.String(4)},
			Spec: kueue.ClusterQueueSpec{AdmissionChecksStrategy: &kueue.AdmissionChecksStrategy{AdmissionChecks: []kueue.AdmissionCheckStrategyRule{
				{Name: checkName}, {Name: kueue.AdmissionCheckReference(mk.Name)},
			}}}}
		Expect(env.Manager.Client.Create(ctx, cq)).To(Succeed())

		tj := trainJob(ns).Obj()
		wl := sim.SubmitTo(ctx, tj, cq.Name)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "would dispatch the workload twice")
		Consistently(func(g Gomega) {
			for _, w := range env.Workers {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).To(BeNil())
			}
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

func kueueWorkloadSpec() *kueue.WorkloadSpec {
	return &kueue.WorkloadSpec{PodSets: []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: 1,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}}
}

// eventReasons lists the reasons of the events on a manager Workload.
func eventReasons(ctx context.Context, g Gomega, wl *kueue.Workload) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Manager.Client.List(ctx, list, client.InNamespace(wl.Namespace))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == wl.Name && e.Regarding.Kind == "Workload" {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
