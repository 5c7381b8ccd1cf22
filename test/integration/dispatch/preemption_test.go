package dispatch

import (
	"context"
	"encoding/json"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// fill takes the whole quota quota() gave namespace ns on each worker,
// with one workload admitted there holding its one CPU, and returns them
// by worker.
func fill(ctx context.Context, ns string, workers ...*framework.Cluster) map[string]*kueue.Workload {
	GinkgoHelper()
	bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})
	holders := map[string]*kueue.Workload{}
	for range workers {
		wl := bestFit.Submit(ctx, trainJob(ns).Obj())
		var on string
		Eventually(func(g Gomega) {
			copies := copiesOn(ctx, g, wl)
			g.Expect(copies).To(HaveLen(1))
			on = copies[0]
		}).Should(Succeed())
		Expect(holders).NotTo(HaveKey(on), "a second workload sent to the worker the first fills")
		admitHolding(ctx, workerNamed(on), wl, ns)
		bestFit.ExpectCheck(ctx, wl, kueue.CheckStateReady, on)
		holders[on] = wl
	}
	for _, w := range workers {
		Eventually(func(g Gomega) {
			remote, err := courier.Cache.Get(w.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(remote.Capacity(ns, "lq").Flavors[0].Resources["cpu"].Free()).To(BeNumerically("<=", 0), "free CPU on %s", w.Name)
		}).Should(Succeed())
	}
	return holders
}

// reconnect makes Courier connect to worker anew, with the same
// credentials under another context name.
func reconnect(ctx context.Context, worker *framework.Cluster) {
	GinkgoHelper()
	data, err := worker.Kubeconfig(framework.CourierUser)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	name := worker.Name + "-" + time.Now().Format("150405.000")
	cfg.Contexts[name] = cfg.Contexts[cfg.CurrentContext]
	delete(cfg.Contexts, cfg.CurrentContext)
	cfg.CurrentContext = name
	data, err = clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	writeKubeconfig(ctx, worker, data)
}

// answerGateProbes plays a worker Kueue that takes preemption gates: it
// lists a probe's gate in its status, as such a Kueue does, until the spec
// ends.
func answerGateProbes(worker *framework.Cluster) {
	DeferCleanup(framework.Run(func(ctx context.Context) error {
		for ctx.Err() == nil {
			list := &kueue.WorkloadList{}
			if err := worker.Client.List(ctx, list, client.HasLabels{courierv1alpha1.GateProbeLabel}); err == nil {
				for i := range list.Items {
					probe := &list.Items[i]
					if len(probe.Status.PreemptionGates) == 0 {
						probe.Status.PreemptionGates = []kueue.PreemptionGateState{{Name: courierv1alpha1.PreemptionGate,
							Position: kueue.PreemptionGatePositionClosed, LastTransitionTime: metav1.Now()}}
						_ = worker.Client.Status().Update(ctx, probe)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		return nil
	}))
}

func expectGates(ctx context.Context, worker *framework.Cluster, want courierv1alpha1.PreemptionGatesState) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		probes := &kueue.WorkloadList{}
		g.Expect(worker.Client.List(ctx, probes, client.HasLabels{courierv1alpha1.GateProbeLabel})).To(Succeed())
		wc := workerCluster(ctx, g, worker.Name)
		g.Expect(wc.Status.PreemptionGates).To(Equal(want), "probes on %s: %+v; conditions %+v", worker.Name, probes.Items, wc.Status.Conditions)
	}).WithTimeout(time.Minute).Should(Succeed())
}

// blockOnGate plays a gated worker's Kueue that found no room for wl's
// copy without preempting: it holds the preemption behind the gate, as
// asked at the given time.
func blockOnGate(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload, asked time.Time) {
	GinkgoHelper()
	kueuesim.UpdateStatus(ctx, worker, wl, func(w *kueue.Workload) {
		w.Status.PreemptionGates = []kueue.PreemptionGateState{{Name: courierv1alpha1.PreemptionGate,
			Position: kueue.PreemptionGatePositionClosed, LastTransitionTime: metav1.NewTime(asked)}}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadBlockedOnPreemptionGates,
			Status: metav1.ConditionTrue, Reason: kueue.PreemptionGated, Message: "Workload requires preemption, but it's gated",
			LastTransitionTime: metav1.NewTime(asked)})
	})
}

func gatePosition(ctx context.Context, g Gomega, worker *framework.Cluster, wl *kueue.Workload) kueue.PreemptionGatePosition {
	copy := kueuesim.Read(ctx, g, worker, wl)
	g.Expect(copy).NotTo(BeNil())
	for _, s := range copy.Status.PreemptionGates {
		if s.Name == courierv1alpha1.PreemptionGate {
			return s.Position
		}
	}
	return ""
}

var _ = Describe("Preemption across workers", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("sends a workload that would have to preempt to one worker at a time, whatever the strategy", func(ctx context.Context) {
		for _, w := range pool {
			quota(ctx, w, ns, "1")
		}
		fill(ctx, ns, pool...)
		allAtOnce, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce})
		tj := trainJob(ns).Obj()
		wl := allAtOnce.Submit(ctx, tj)

		allAtOnce.ExpectCheck(ctx, wl, kueue.CheckStatePending, pool[0].Name+" may preempt; 1 more would have to and wait, as one cluster preempts at a time.")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(pool[0].Name))
		}).WithTimeout(3*time.Second).Should(Succeed(), "a second worker got a copy it would have to preempt for")
		kueuesim.AdmitOn(ctx, pool[0], wl)
		allAtOnce.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[0].Name)
		expectTrainJobOnlyOn(ctx, tj, pool[0])
	})

	It("opens the preemption gate of one worker at a time where the workers' Kueue takes gates", func(ctx context.Context) {
		for _, w := range pool {
			quota(ctx, w, ns, "1")
		}
		fill(ctx, ns, pool...)
		for _, w := range pool {
			// Cleanups run last in, first out: the probes stop being
			// answered before Courier probes once more.
			DeferCleanup(func(ctx context.Context) {
				reconnect(ctx, w)
				expectGates(ctx, w, courierv1alpha1.PreemptionGatesDisabled)
			})
			answerGateProbes(w)
			reconnect(ctx, w)
		}
		for _, w := range pool {
			expectGates(ctx, w, courierv1alpha1.PreemptionGatesEnabled)
		}
		allAtOnce, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce})
		tj := trainJob(ns).Obj()
		wl := allAtOnce.Submit(ctx, tj)

		By("sending both workers a copy behind Courier's gate")
		expectCopies(ctx, wl, pool...)
		for _, w := range pool {
			Eventually(func(g Gomega) {
				g.Expect(kueuesim.Read(ctx, g, w, wl).Spec.PreemptionGates).To(Equal([]kueue.PreemptionGate{{Name: courierv1alpha1.PreemptionGate}}))
			}).Should(Succeed())
		}

		By("opening the gate of the worker whose Kueue asked first, and only that one")
		// Conditions keep whole seconds, so the two asks are seconds apart:
		// written within one second they would tie, whichever came first.
		now := time.Now()
		blockOnGate(ctx, pool[1], wl, now.Add(-5*time.Second))
		blockOnGate(ctx, pool[0], wl, now)
		Eventually(func(g Gomega) {
			g.Expect(gatePosition(ctx, g, pool[1], wl)).To(Equal(kueue.PreemptionGatePositionOpen))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(gatePosition(ctx, g, pool[0], wl)).To(Equal(kueue.PreemptionGatePositionClosed))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventPreemptionAllowed))
		}).Should(Succeed())

		By("running it where that worker's Kueue preempted for it")
		kueuesim.AdmitOn(ctx, pool[1], wl)
		allAtOnce.ExpectCheck(ctx, wl, kueue.CheckStateReady, pool[1].Name)
		expectTrainJobOnlyOn(ctx, tj, pool[1])
	})

	It("moves a job its workers evict at most maxMoves times for one reason, then rejects it, naming each worker's reason", func(ctx context.Context) {
		bounce, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce, MaxMoves: ptr.To[int32](1)})
		tj := trainJob(ns).Obj()
		wl := bounce.Submit(ctx, tj)
		preempted := metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted", Message: "preempted by a local job"}
		for i, w := range pool {
			By("running it on " + w.Name + " until that worker's Kueue preempts it")
			expectCopies(ctx, wl, pool...)
			kueuesim.AdmitOn(ctx, w, wl)
			bounce.ExpectCheck(ctx, wl, kueue.CheckStateReady, w.Name)
			kueuesim.SetRemoteCondition(ctx, w, wl, preempted)
			bounce.ExpectCheck(ctx, wl, kueue.CheckStateRetry, `Worker "`+w.Name+`" evicted the workload (Preempted`)
			Eventually(func(g Gomega) {
				got := bounce.ManagerWorkload(ctx, g, wl)
				var moves []workload.Move
				g.Expect(json.Unmarshal([]byte(got.Annotations[courierv1alpha1.MovesAnnotation]), &moves)).To(Succeed())
				g.Expect(moves).To(HaveLen(i + 1))
				g.Expect(moves[i].Cluster).To(Equal(w.Name))
				g.Expect(moves[i].Reason).To(Equal("Preempted"))
				// The events API folds a repeated reason into the first
				// event's series, so its note names the first worker.
				g.Expect(jobEventNotes(ctx, g, tj, courierv1alpha1.EventRemoteEvicted)).To(ContainElement(ContainSubstring(`Worker "` + pool[0].Name + `" evicted`)))
			}).Should(Succeed())
			bounce.EvictAndRequeue(ctx, wl)
			bounce.ReserveQuota(ctx, wl)
		}

		By("rejecting it rather than moving it a second time for the same reason")
		bounce.ExpectCheck(ctx, wl, kueue.CheckStateRejected,
			"Workers evicted the workload for Preempted more than the policy's maxMoves (1) times: "+pool[0].Name+": Preempted; "+pool[1].Name+": Preempted.")
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventMovesExhausted))
			g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("finishes a job whose worker preempts it as it ends: the final status wins, nothing runs again", func(ctx context.Context) {
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, pool[0])
		remote := expectTrainJobOnlyOn(ctx, tj, pool[0])
		meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", Message: "done"})
		Expect(pool[0].Client.Status().Update(ctx, remote)).To(Succeed())
		kueuesim.SetRemoteCondition(ctx, pool[0], wl, metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted", Message: "preempted as it ended"})

		Eventually(func(g Gomega) {
			got := sim.ManagerWorkload(ctx, g, wl)
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, kueue.WorkloadFinished)).To(BeTrue())
			g.Expect(sim.CheckState(got).State).To(Equal(kueue.CheckStateReady))
			local := &trainer.TrainJob{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).NotTo(ContainElement(courierv1alpha1.EventRemoteEvicted))
			g.Expect(kueuesim.Read(ctx, g, pool[1], tj)).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})
})
