package dispatch

import (
	"context"
	"slices"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/runtimepatch"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// quota gives namespace ns on worker a LocalQueue "lq" in a ClusterQueue of
// its own with cpus of nominal CPU quota, as a platform team would, and
// waits until Courier sees that capacity.
func quota(ctx context.Context, worker *framework.Cluster, ns, cpus string) {
	GinkgoHelper()
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := worker.Client.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
				Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{{
					Name: corev1.ResourceCPU, NominalQuota: resource.MustParse(cpus),
				}}}},
			}},
		},
	}
	Expect(worker.Client.Create(ctx, cq)).To(Succeed())
	Expect(worker.Client.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "lq", Namespace: ns},
		Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)}})).To(Succeed())
	Eventually(func(g Gomega) {
		remote, err := courier.Cache.Get(worker.Name)
		g.Expect(err).NotTo(HaveOccurred())
		c := remote.Capacity(ns, "lq")
		g.Expect(c.Known).To(BeTrue(), "capacity of %s on %s", ns, worker.Name)
		g.Expect(c.Flavors).NotTo(BeEmpty())
	}).Should(Succeed())
}

// policyCheck creates a DispatchPolicy over the pool with spec and a Courier
// AdmissionCheck that uses it, and returns a Sim for that check.
func policyCheck(ctx context.Context, spec courierv1alpha1.DispatchPolicySpec) (*kueuesim.Sim, string) {
	GinkgoHelper()
	name := "placement-" + rand.String(5)
	spec.Clusters = workerNames[:2]
	Expect(env.Manager.Client.Create(ctx, &courierv1alpha1.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})).To(Succeed())
	Expect(env.Manager.Client.Create(ctx, framework.AdmissionCheck(name, name))).To(Succeed())
	return &kueuesim.Sim{Env: env, Check: kueue.AdmissionCheckReference(name)}, name
}

// admitHolding admits wl's copy on worker as its Kueue would, holding one
// CPU of the ClusterQueue quota gave namespace ns there.
func admitHolding(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload, ns string) {
	GinkgoHelper()
	kueuesim.UpdateStatus(ctx, worker, wl, func(w *kueue.Workload) {
		held := kueuetesting.MakeWorkload(w.Name, w.Namespace).ReserveQuota(ns).Assigned(corev1.ResourceCPU, "default", "1").Admit(time.Now()).Obj()
		w.Status.Admission = held.Status.Admission
		for _, c := range held.Status.Conditions {
			meta.SetStatusCondition(&w.Status.Conditions, c)
		}
	})
}

// workerNamed is the worker of the pool with that name.
func workerNamed(name string) *framework.Cluster {
	GinkgoHelper()
	i := slices.IndexFunc(pool, func(w *framework.Cluster) bool { return w.Name == name })
	Expect(i).NotTo(BeNumerically("<", 0), "no worker %s in the pool", name)
	return pool[i]
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

var _ = Describe("Placement", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("copies the workload to the one worker with the most room, with BestFit by default, and runs it there", func(ctx context.Context) {
		small, big := pool[0], pool[1]
		quota(ctx, small, ns, "4")
		quota(ctx, big, ns, "16")
		bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})
		tj := trainJob(ns).Obj()
		wl := bestFit.Submit(ctx, tj)

		bestFit.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Nominated "+big.Name+" (best of 2; 1 more eligible in later rounds)")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(big.Name))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		kueuesim.AdmitOn(ctx, big, wl)
		bestFit.ExpectCheck(ctx, wl, kueue.CheckStateReady, big.Name)
		expectTrainJobOnlyOn(ctx, tj, big)
	})

	// Kueue writes a ClusterQueue's usage a second or more after it
	// admits; here no Kueue writes it at all, so the copy's own admission is
	// all that says the worker is full.
	It("counts the quota a copy holds from its admission, before the ClusterQueue's status does", func(ctx context.Context) {
		for _, w := range pool[:2] {
			quota(ctx, w, ns, "1")
		}
		bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})
		first := bestFit.Submit(ctx, trainJob(ns).Obj())
		var full *framework.Cluster
		Eventually(func(g Gomega) {
			on := copiesOn(ctx, g, first)
			g.Expect(on).To(HaveLen(1))
			full = workerNamed(on[0])
		}).Should(Succeed())
		// Its own copy, waiting there, is no demand against itself, also when
		// Courier looks again 2 s after nominating.
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, first)).To(ConsistOf(full.Name))
		}).WithTimeout(3*time.Second).Should(Succeed(), "widened while the worker it waits on has room for it")
		admitHolding(ctx, full, first, ns)
		bestFit.ExpectCheck(ctx, first, kueue.CheckStateReady, full.Name)
		Eventually(func(g Gomega) {
			remote, err := courier.Cache.Get(full.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(remote.Capacity(ns, "lq").Flavors[0].Resources[corev1.ResourceCPU].Usage).To(BeEquivalentTo(1000), "CPU in use on %s", full.Name)
		}).Should(Succeed())
		cq := &kueue.ClusterQueue{}
		Expect(full.Client.Get(ctx, client.ObjectKey{Name: ns}, cq)).To(Succeed())
		Expect(cq.Status.FlavorsReservation).To(BeEmpty(), "the ClusterQueue's status must not count the copy for this test")

		By("sending the next workload to the other worker")
		second := bestFit.Submit(ctx, trainJob(ns).Obj())
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, second)).NotTo(BeEmpty()) }).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, second)).NotTo(ContainElement(full.Name))
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})

	// Courier assumes the demand of a copy it created until a capacity
	// snapshot shows it. A copy admitted and deleted before any snapshot
	// did is gone with its job copy, deleted by the worker's garbage
	// collector and not by Courier: its demand must go with it.
	It("forgets the demand of a copy that went with its job copy, and sends the next workload to the room it left", func(ctx context.Context) {
		small, big := pool[0], pool[1]
		quota(ctx, small, ns, "1")
		quota(ctx, big, ns, "2")
		bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})
		tj := trainJob(ns).Obj()
		first := bestFit.Submit(ctx, tj)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, first)).To(ConsistOf(big.Name)) }).Should(Succeed())
		admitHolding(ctx, big, first, ns)
		bestFit.ExpectCheck(ctx, first, kueue.CheckStateReady, big.Name)
		jobCopy := expectTrainJobOnlyOn(ctx, tj, big)

		By("adopting the Workload copy by the job copy, as the worker's Kueue does, and deleting the job on the manager")
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, big, first)
			g.Expect(copy).NotTo(BeNil())
			copy.OwnerReferences = []metav1.OwnerReference{{APIVersion: trainer.SchemeGroupVersion.String(), Kind: "TrainJob",
				Name: jobCopy.Name, UID: jobCopy.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			g.Expect(big.Client.Update(ctx, copy)).To(Succeed())
		}).Should(Succeed())
		Expect(env.Manager.Client.Delete(ctx, tj)).To(Succeed())
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, first))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, big, tj)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, big, first)).To(BeNil())
			remote, err := courier.Cache.Get(big.Name)
			g.Expect(err).NotTo(HaveOccurred())
			cpu := remote.Capacity(ns, "lq").Flavors[0].Resources[corev1.ResourceCPU]
			g.Expect(cpu.Usage+cpu.Pending).To(BeZero(), "CPU in use or waiting on %s, as Courier's informers show it", big.Name)
		}).Should(Succeed())

		By("sending the next workload to the worker with the most room, the one the first left")
		second := bestFit.Submit(ctx, trainJob(ns).Obj())
		bestFit.ExpectCheck(ctx, second, kueue.CheckStatePending, "Nominated "+big.Name+" (best of 2")
	})

	It("copies a workload waiting on a full worker to another as soon as room appears there, not a round later", func(ctx context.Context) {
		for _, w := range pool[:2] {
			quota(ctx, w, ns, "1")
		}
		holders := fill(ctx, ns, pool[:2]...)
		bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})

		By("holding a third workload on one full worker")
		waiting := bestFit.Submit(ctx, trainJob(ns).Obj())
		var full string
		Eventually(func(g Gomega) {
			copies := copiesOn(ctx, g, waiting)
			g.Expect(copies).To(HaveLen(1))
			full = copies[0]
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, waiting)).To(ConsistOf(full))
		}).WithTimeout(3*time.Second).Should(Succeed(), "widened while every worker was full")

		By("finishing the job on the other worker: its room goes to the waiting workload at once")
		other := pool[0].Name
		if other == full {
			other = pool[1].Name
		}
		kueuesim.SetRemoteCondition(ctx, workerNamed(other), holders[other], metav1.Condition{Type: kueue.WorkloadFinished,
			Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Done"})
		Eventually(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, waiting)).To(ConsistOf(full, other))
		}).WithTimeout(10*time.Second).Should(Succeed(), "the round of a minute is not over")
		admitHolding(ctx, workerNamed(other), waiting, ns)
		bestFit.ExpectCheck(ctx, waiting, kueue.CheckStateReady, other)
	})

	It("widens to the next worker once roundTimeout passes without an admission", func(ctx context.Context) {
		small, big := pool[0], pool[1]
		quota(ctx, small, ns, "4")
		quota(ctx, big, ns, "16")
		bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{RoundTimeout: &metav1.Duration{Duration: 4 * time.Second}})
		tj := trainJob(ns).Obj()
		wl := bestFit.Submit(ctx, tj)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(big.Name)) }).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(big.Name))
		}).WithTimeout(2*time.Second).Should(Succeed(), "widened before roundTimeout")

		By("copying it to the next worker too once the round is over")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(big.Name, small.Name)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, small, wl)
		bestFit.ExpectCheck(ctx, wl, kueue.CheckStateReady, small.Name)
		expectTrainJobOnlyOn(ctx, tj, small)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(small.Name)) }).Should(Succeed())
	})

	It("passes over the workers a CEL filter on their labels leaves out, saying so", func(ctx context.Context) {
		west, east := pool[0], pool[1]
		label := func(ctx context.Context, wc string, zone string) {
			Eventually(func(g Gomega) {
				obj := &courierv1alpha1.WorkerCluster{}
				g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: wc}, obj)).To(Succeed())
				if zone == "" {
					delete(obj.Labels, "example.com/zone")
				} else {
					obj.Labels = map[string]string{"example.com/zone": zone}
				}
				g.Expect(env.Manager.Client.Update(ctx, obj)).To(Succeed())
			}).Should(Succeed())
		}
		label(ctx, west.Name, "west")
		DeferCleanup(func(ctx context.Context) { label(ctx, west.Name, "") })
		filtered, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce,
			Filter: `"example.com/zone" in cluster.labels && cluster.labels["example.com/zone"] == "west"`})
		tj := trainJob(ns).Obj()
		wl := filtered.Submit(ctx, tj)
		filtered.ExpectCheck(ctx, wl, kueue.CheckStatePending, east.Name+": filtered out by the policy's filter")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(west.Name))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("marks a policy whose CEL does not compile Valid=False, and its AdmissionCheck inactive", func(ctx context.Context) {
		_, name := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Filter: "cluster.name =="})
		Eventually(func(g Gomega) {
			policy := &courierv1alpha1.DispatchPolicy{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, policy)).To(Succeed())
			valid := meta.FindStatusCondition(policy.Status.Conditions, courierv1alpha1.DispatchPolicyValid)
			g.Expect(valid).NotTo(BeNil())
			g.Expect(valid.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(valid.Reason).To(Equal(courierv1alpha1.ReasonInvalidExpression))
			g.Expect(valid.Message).To(ContainSubstring("filter: "))
			g.Expect(policy.Status.ObservedGeneration).To(Equal(policy.Generation))
		}).Should(Succeed())
		ac := expectCheckActive(ctx, name, metav1.ConditionFalse, courierv1alpha1.ReasonPolicyInvalid)
		Expect(ac.Status.Conditions[0].Message).To(ContainSubstring("filter: "))

		By("turning Valid and active once the expression is fixed")
		Eventually(func(g Gomega) {
			policy := &courierv1alpha1.DispatchPolicy{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, policy)).To(Succeed())
			policy.Spec.Filter = `cluster.name != ""`
			g.Expect(env.Manager.Client.Update(ctx, policy)).To(Succeed())
		}).Should(Succeed())
		expectCheckActive(ctx, name, metav1.ConditionTrue, courierv1alpha1.ReasonAdmissionCheckActive)
	})

	It("rejects a workload no worker's quota could ever hold", func(ctx context.Context) {
		for _, w := range pool {
			quota(ctx, w, ns, "500m")
		}
		bestFit, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})
		wl := bestFit.Submit(ctx, trainJob(ns).Obj())
		bestFit.ExpectCheck(ctx, wl, kueue.CheckStateRejected, "No worker's quota could ever hold the whole workload")
		got := bestFit.ExpectCheck(ctx, wl, kueue.CheckStateRejected, "cpu: needs 1, can ever have 0.5")
		Expect(got.Status.NominatedClusterNames).To(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, wl)).To(ContainElement(courierv1alpha1.EventNoCapacity))
		}).Should(Succeed())
	})

	It("requeues a workload no worker admits within maxWaitTime, with the reasons", func(ctx context.Context) {
		waiting, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{Strategy: courierv1alpha1.AllAtOnce, MaxWaitTime: &metav1.Duration{Duration: 3 * time.Second}})
		wl := waiting.Submit(ctx, trainJob(ns).Obj())
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(HaveLen(2)) }).Should(Succeed())
		waiting.ExpectCheck(ctx, wl, kueue.CheckStateRetry, "No worker admitted the workload within the policy's maxWaitTime")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty()) }).Should(Succeed())
	})
})

var _ = Describe("A worker's own RuntimePatch", Ordered, func() {
	setPatch := func(ctx context.Context, patch *trainer.TrainingRuntimeSpecPatch) {
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: spare.Name}, wc)).To(Succeed())
			wc.Spec.RuntimePatch = patch
			g.Expect(env.Manager.Client.Update(ctx, wc)).To(Succeed())
		}).Should(Succeed())
	}
	AfterAll(func(ctx context.Context) { setPatch(ctx, nil) })

	It("is Courier's own entry on the TrainJob sent there, and not on the manager's", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		patch := trainJob(ns).RuntimePatch("x.io/y", "example.com/zone", "west").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec
		setPatch(ctx, patch)
		tj := trainJob(ns).RuntimePatch("example.com/user", "team", "a").Obj()
		wl := spareSim.Submit(ctx, tj)
		// Deleting them on the manager takes the job off the spare worker,
		// which the drain spec deletes.
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, tj))).To(Succeed())
			Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wl))).To(Succeed())
			Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, spare, tj)).To(BeNil()) }).Should(Succeed())
		})
		expectCopies(ctx, wl, pool[0], spare)
		kueuesim.AdmitOn(ctx, spare, wl)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, spare.Name)
		remote := expectTrainJobOnlyOn(ctx, tj, spare)
		Expect(remote.Spec.RuntimePatches).To(HaveLen(2))
		Expect(remote.Spec.RuntimePatches[0].Manager).To(Equal("example.com/user"))
		Expect(remote.Spec.RuntimePatches[1].Manager).To(Equal(runtimepatch.CourierManager))
		Expect(equality.Semantic.DeepEqual(remote.Spec.RuntimePatches[1].TrainingRuntimeSpec, patch)).To(BeTrue(),
			"Courier's entry %+v, the worker's patch %+v", remote.Spec.RuntimePatches[1].TrainingRuntimeSpec, patch)
		local := kueuesim.Read(ctx, Default, env.Manager, tj)
		Expect(local.Spec.RuntimePatches).To(HaveLen(1), "the manager's TrainJob is not changed")
	})

	It("sends no TrainJob to a worker whose patch Trainer would refuse, and says why on the WorkerCluster", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		setPatch(ctx, trainJob(ns).NodeEnv("x.io/y", "A", "b").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec)
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: spare.Name}, wc)).To(Succeed())
			valid := meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterRuntimePatchValid)
			g.Expect(valid).NotTo(BeNil())
			g.Expect(valid.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(valid.Message).To(ContainSubstring(`Trainer forbids env on the "node" container`))
		}).Should(Succeed())
		wl := spareSim.Submit(ctx, trainJob(ns).Obj())
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStatePending, spare.Name+": its runtimePatch breaks Trainer's rules")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(pool[0].Name))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("refuses, with a clear rejection, a TrainJob with no room left for the worker's entry", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		setPatch(ctx, trainJob(ns).RuntimePatch("x.io/y", "example.com/zone", "west").Obj().Spec.RuntimePatches[0].TrainingRuntimeSpec)
		full := trainJob(ns)
		for i := range runtimepatch.MaxEntries {
			full.RuntimePatch("example.com/u"+string(rune('a'+i)), "k", "v")
		}
		wl := spareSim.Submit(ctx, full.Obj())
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStatePending, spare.Name+": TrainJob "+ns)
		spareSim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "the most Trainer allows")
		Consistently(func(g Gomega) {
			g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(pool[0].Name))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})
