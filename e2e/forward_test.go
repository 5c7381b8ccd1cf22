package e2e

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// setStopPolicy sets the stop policy of the LocalQueue the suite uses on a
// worker.
func setStopPolicy(ctx context.Context, w cluster, policy kueue.StopPolicy) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		lq := &kueue.LocalQueue{}
		g.Expect(w.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: queue}, lq)).To(Succeed())
		lq.Spec.StopPolicy = ptr.To(policy)
		g.Expect(w.client.Update(ctx, lq)).To(Succeed())
	}).Should(Succeed())
}

var _ = Describe("Changes after dispatch, with real Kueue and Trainer", func() {
	It("runs a TrainJob with a RuntimePatch added on the manager while it waited on a stopped worker queue", func(ctx context.Context) {
		for _, w := range workers {
			setStopPolicy(ctx, w, kueue.Hold)
			DeferCleanup(setStopPolicy, w, kueue.None)
		}
		tj := trainertesting.MakeTrainJob("e2e-fwd-"+rand.String(5), namespace).Queue(queue).
			ManagedBy(adapter.TrainJobManagedBy).GPUs(1).RunFor("example.com/user", 30*time.Second).Obj()
		Expect(manager.client.Create(ctx, tj)).To(Succeed())
		wl := workloadOf(ctx, tj)

		By("waiting until its Workload waits on a worker whose queue is stopped")
		Eventually(func(g Gomega) {
			waiting := 0
			for _, w := range workers {
				if exists(ctx, g, w, wl) {
					waiting++
				}
			}
			g.Expect(waiting).To(BeNumerically(">", 0))
		}).Should(Succeed())

		By("adding a RuntimePatch on the manager, where the job is still suspended")
		Eventually(func(g Gomega) {
			local := &trainer.TrainJob{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			g.Expect(local.Spec.Suspend).To(HaveValue(BeTrue()))
			changed := (&trainertesting.TrainJobWrapper{TrainJob: *local}).RuntimePatch("example.com/late", "stage", "two").Obj()
			g.Expect(manager.client.Update(ctx, changed)).To(Succeed())
		}).Should(Succeed())

		By("releasing the queues: it runs on a worker, with the patch")
		for _, w := range workers {
			setStopPolicy(ctx, w, kueue.None)
		}
		w := dispatchedTo(ctx, workloadOf(ctx, tj))
		Eventually(func(g Gomega) {
			remote := &trainer.TrainJob{}
			g.Expect(w.client.Get(ctx, client.ObjectKeyFromObject(tj), remote)).To(Succeed())
			g.Expect(patchManagers(remote)).To(ContainElements("example.com/user", "example.com/late"))
			js := &unstructured.Unstructured{}
			js.SetGroupVersionKind(jobset.SchemeGroupVersion.WithKind("JobSet"))
			g.Expect(w.client.Get(ctx, client.ObjectKeyFromObject(tj), js)).To(Succeed(), "the worker's Trainer runs the job")
			rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
			found := false
			for _, rj := range rjs {
				m, _ := rj.(map[string]any)
				if m["name"] == "node" {
					labels, _, _ := unstructured.NestedStringMap(m, "template", "spec", "template", "metadata", "labels")
					g.Expect(labels).To(HaveKeyWithValue("stage", "two"), "the node pods carry the late patch")
					found = true
				}
			}
			g.Expect(found).To(BeTrue(), "the JobSet has no node replicated job")
		}).Should(Succeed())

		By("labelling the running job on the manager: the label reaches the running copy, its spec untouched")
		running := &trainer.TrainJob{}
		Eventually(func(g Gomega) {
			g.Expect(w.client.Get(ctx, client.ObjectKeyFromObject(tj), running)).To(Succeed())
			g.Expect(running.Spec.Suspend).To(HaveValue(BeFalse()), "the worker's Kueue started it")
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			local := &trainer.TrainJob{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			local.Labels["owner"] = "team-b"
			g.Expect(manager.client.Update(ctx, local)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			remote := &trainer.TrainJob{}
			g.Expect(w.client.Get(ctx, client.ObjectKeyFromObject(tj), remote)).To(Succeed())
			g.Expect(remote.Labels).To(HaveKeyWithValue("owner", "team-b"))
			g.Expect(remote.Generation).To(Equal(running.Generation), "forwarding a label wrote the running copy's spec")
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			local := &trainer.TrainJob{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(tj), local)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(local.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
		}).Should(Succeed())
		Expect(manager.client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	})
})
