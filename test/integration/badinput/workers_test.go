package badinput

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	admissiontesting "github.com/courierdev/courier/pkg/testing/admission"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// refuseOn installs on worker a ValidatingAdmissionPolicy that refuses to
// create resource of group in namespace ns unless expression holds, as a
// worker's webhook would, and waits until the API server refuses probe (a
// dry run) with message; the policy goes when the spec ends.
func refuseOn(ctx context.Context, worker *framework.Cluster, ns, group, resource, expression, message string, probe client.Object) {
	GinkgoHelper()
	policy, binding := admissiontesting.DenyCreate("refuse-"+rand.String(5), group, resource,
		&metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}, expression, message)
	Expect(worker.Client.Create(ctx, policy)).To(Succeed())
	Expect(worker.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, policy))).To(Succeed())
	})
	// The API server loads policies asynchronously.
	Eventually(func(g Gomega) {
		g.Expect(worker.Client.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)).To(MatchError(ContainSubstring(message)))
	}).Should(Succeed())
}

// failOn installs on worker a webhook for creates of resource of group in
// namespace ns that its API server cannot call, as when the controller
// serving it is down, and waits until a create of probe (a dry run) fails
// for it; the webhook goes when the spec ends.
func failOn(ctx context.Context, worker *framework.Cluster, ns, group, resource string, probe client.Object) {
	GinkgoHelper()
	webhook := admissiontesting.UnreachableWebhook("unreachable-"+rand.String(5), group, resource,
		&metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})
	Expect(worker.Client.Create(ctx, webhook)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(worker.Client.Delete(ctx, webhook))).To(Succeed())
	})
	Eventually(func(g Gomega) {
		g.Expect(worker.Client.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)).To(MatchError(ContainSubstring("failed calling webhook")))
	}).Should(Succeed())
}

// probeWorkload is a Workload for refuseOn and failOn to probe with.
func probeWorkload(ns string) *kueue.Workload {
	return &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: kueue.WorkloadSpec{PodSets: []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}}}
}

var _ = Describe("A worker that refuses Courier's creates", func() {
	It("reports a Workload copy refused by the worker's admission, naming the worker and the refusal, and uses the other worker", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		refusing, other := env.Workers[0], env.Workers[1]
		refuseOn(ctx, refusing, ns, "kueue.x-k8s.io", "workloads", "false", "workloads from other clusters are not allowed here", probeWorkload(ns))
		tj := trainJob(ns).Obj()
		wl := sim.Submit(ctx, tj)
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventCreateRefused, `Worker "`+refusing.Name+`"`, "workloads from other clusters are not allowed here")
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, refusing.Name+": refused the Workload")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(other.Name)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, other, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, other.Name)
	})
})

var _ = Describe("A worker that cannot create Courier's copies", func() {
	It("passes the worker over, with a CreateFailed event naming it and the failure, and uses the other worker, for the namespace's next job without trying it", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		failing, other := env.Workers[0], env.Workers[1]
		// The worker's Kueue is down: its webhook cannot be called.
		failOn(ctx, failing, ns, "kueue.x-k8s.io", "workloads", probeWorkload(ns))

		tj := trainJob(ns).Obj()
		wl := sim.Submit(ctx, tj)
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventCreateFailed, `Worker "`+failing.Name+`" failed to create Workload`, "failed calling webhook")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(other.Name)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, other, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, other.Name)

		By("sending the namespace's next job to the other worker without trying the failing one")
		next := sim.Submit(ctx, trainJob(ns).Obj())
		sim.ExpectCheck(ctx, next, kueue.CheckStatePending, failing.Name+": failed to create Workload "+ns+"/"+wl.Name+"; passed over until")
		Expect(copiesOn(ctx, Default, next)).To(ConsistOf(other.Name))
		kueuesim.AdmitOn(ctx, other, next)
		sim.ExpectCheck(ctx, next, kueue.CheckStateReady, other.Name)
		expectWorkloadEvent(ctx, next, courierv1alpha1.EventDispatched, other.Name)
		Expect(eventNotes(ctx, Default, ns, "Workload", next.Name, courierv1alpha1.EventCreateFailed)).To(BeEmpty())
	})
})

var _ = Describe("A namespace missing on every worker", func() {
	It("holds the job with a NamespaceMissing event per worker, and dispatches it once the namespace exists", func(ctx context.Context) {
		managerNS, err := env.Manager.CreateNamespace(ctx, "manager-only")
		Expect(err).NotTo(HaveOccurred())
		ns := managerNS.Name
		wl := sim.Submit(ctx, trainJob(ns).Obj())
		for _, w := range env.Workers {
			sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, w.Name+`: namespace "`+ns+`" does not exist there`)
			expectWorkloadEvent(ctx, wl, courierv1alpha1.EventNamespaceMissing, `Namespace "`+ns+`" does not exist on worker "`+w.Name+`"; create it there`)
		}

		By("dispatching once the namespace is created on a worker")
		target := env.Workers[1]
		Expect(target.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(ConsistOf(target.Name)) }).WithTimeout(time.Minute).Should(Succeed())
		kueuesim.AdmitOn(ctx, target, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)
	})
})

var _ = Describe("A kind removed from a worker while its jobs run there", func() {
	It("lets the running job finish there, refuses new ones, and reports KindsMissing once the CRD is gone", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		kept, stripped := env.Workers[0], env.Workers[1]
		running := plainJob(ns, "running-"+rand.String(5))
		wl := sim.Submit(ctx, running)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(HaveLen(2)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, stripped, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, stripped.Name)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, stripped, running)).NotTo(BeNil()) }).Should(Succeed())

		By("deleting the PlainJob CRD on the worker")
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(stripped.Client.Get(ctx, client.ObjectKey{Name: "plainjobs.example.courier.dev"}, crd)).To(Succeed())
		Expect(stripped.Client.Delete(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Eventually(func(g Gomega) {
				g.Expect(stripped.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})).NotTo(Succeed())
			}).WithTimeout(time.Minute).Should(Succeed())
			crd.ObjectMeta = metav1.ObjectMeta{Name: crd.Name}
			crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			Expect(stripped.InstallCRDs(ctx, []*apiextensionsv1.CustomResourceDefinition{crd})).To(Succeed())
			Eventually(func(g Gomega) {
				wc := &courierv1alpha1.WorkerCluster{}
				g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: stripped.Name}, wc)).To(Succeed())
				g.Expect(wc.Status.UnavailableKinds).To(BeEmpty())
			}).WithTimeout(cluster.DefaultKindsPeriod + 30*time.Second).Should(Succeed())
		})

		By("keeping the running copy, held by Courier's finalizer until its final status is mirrored")
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, stripped, running)
			g.Expect(copy).NotTo(BeNil())
			g.Expect(copy.GetDeletionTimestamp()).NotTo(BeNil())
			g.Expect(copy.GetFinalizers()).To(ContainElement(courierv1alpha1.RemoteFinalizer))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(sim.CheckState(sim.ManagerWorkload(ctx, g, wl)).State).To(Equal(kueue.CheckStateReady))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("refusing a new job of that kind there while the CRD is being deleted, and sending it to the other worker")
		next := plainJob(ns, "next-"+rand.String(5))
		nextWl := sim.Submit(ctx, next)
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, nextWl)).To(HaveLen(2)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, stripped, nextWl)
		expectWorkloadEvent(ctx, nextWl, courierv1alpha1.EventCreateRefused, `Worker "`+stripped.Name+`"`, "PlainJob "+ns+"/"+next.GetName(), "terminating")
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, nextWl)).To(ConsistOf(kept.Name)) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, kept, nextWl)
		sim.ExpectCheck(ctx, nextWl, kueue.CheckStateReady, kept.Name)
		Expect(eventNotes(ctx, Default, ns, "Workload", nextWl.Name, courierv1alpha1.EventRemoteEvicted)).To(BeEmpty(), "it never ran there, so it was not sent back to Kueue")

		By("finishing the running job: its status is mirrored, its copy released, and then the CRD goes")
		Eventually(func(g Gomega) {
			copy := kueuesim.Read(ctx, g, stripped, running)
			copy.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
			g.Expect(stripped.Client.Update(ctx, copy)).To(Succeed())
		}).Should(Succeed())
		kueuesim.SetRemoteCondition(ctx, stripped, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue,
			Reason: kueue.WorkloadFinishedReasonSucceeded, Message: "Job finished successfully"})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(sim.ManagerWorkload(ctx, g, wl).Status.Conditions, kueue.WorkloadFinished)).To(BeTrue())
			conditions, _, _ := unstructured.NestedSlice(kueuesim.Read(ctx, g, env.Manager, running).Object, "status", "conditions")
			g.Expect(conditions).To(ContainElement(HaveKeyWithValue("type", "Complete")))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, stripped, running)).To(BeNil(), "the copy is released")
		}).Should(Succeed())

		By("reporting the kind missing on the WorkerCluster, which stays Active for the other kinds")
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: stripped.Name}, wc)).To(Succeed())
			g.Expect(wc.Status.UnavailableKinds).To(Equal([]string{"PlainJob.v1.example.courier.dev"}))
			kinds := meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterKindsAvailable)
			g.Expect(kinds).NotTo(BeNil())
			g.Expect(kinds.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(kinds.Reason).To(Equal(courierv1alpha1.ReasonKindsMissing))
			g.Expect(kinds.Message).To(ContainSubstring("PlainJob.v1.example.courier.dev"))
			g.Expect(meta.IsStatusConditionTrue(wc.Status.Conditions, courierv1alpha1.WorkerClusterActive)).To(BeTrue())
		}).WithTimeout(cluster.DefaultKindsPeriod + 30*time.Second).Should(Succeed())
		third := sim.Submit(ctx, plainJob(ns, "third-"+rand.String(5)))
		sim.ExpectCheck(ctx, third, kueue.CheckStatePending, stripped.Name+": does not serve PlainJob.v1.example.courier.dev")
		Consistently(func(g Gomega) { g.Expect(copiesOn(ctx, g, third)).To(ConsistOf(kept.Name)) }).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

// plainJob is a PlainJob (a kind without a status subresource, whose name
// may have 253 characters) managed by Courier.
func plainJob(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.courier.dev/v1", "kind": "PlainJob",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"managedBy": "courier.dev/dispatcher"},
	}}
}
