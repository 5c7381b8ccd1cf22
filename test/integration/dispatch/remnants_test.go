package dispatch

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/testing/batch"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// A TrainJob copy goes in the background (Trainer re-applies the JobSet of
// one held in the foreground); what ran its pods must not outlive Courier's
// wait for it.
var _ = Describe("What ran a deleted TrainJob copy's pods", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("dispatches again only once the JobSet a deleted TrainJob copy leaves has gone", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, first)
		copy := expectTrainJobOnlyOn(ctx, tj, first)

		By("giving the copy a JobSet that stays after it, as on a worker whose controllers are down")
		js := jobSetOf(copy, "test.courier.dev/hold")
		Expect(first.Client.Create(ctx, js)).To(Succeed())

		By("evicting it on the manager: the copy goes at once, and while its JobSet is there the job goes nowhere else")
		sim.EvictAndRequeue(ctx, wl)
		sim.ReserveQuota(ctx, wl)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, first, tj)).To(BeNil()) }).Should(Succeed())
		expectNothingOn(ctx, second, wl, tj, 3*time.Second)

		By("deleting the JobSet, which its finalizer holds: the check names the finalizer")
		Expect(first.Client.Delete(ctx, js)).To(Succeed())
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "JobSet "+ns+"/"+tj.Name+" has been deleting since ")
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "held by the finalizers test.courier.dev/hold; if no controller on the worker removes them, remove them there by hand.")

		By("dispatching it again once the JobSet is gone")
		Eventually(func(g Gomega) {
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(js), js)).To(Succeed())
			js.SetFinalizers(nil)
			g.Expect(first.Client.Update(ctx, js)).To(Succeed())
		}).Should(Succeed())
		Expect(client.IgnoreNotFound(first.Client.Delete(ctx, js))).To(Succeed())
		expectCopies(ctx, wl, first, second)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)
	})

	It("holds the job back until the pods of a deleted TrainJob copy are gone, with the worker's garbage collector at work", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, first)
		copy := expectTrainJobOnlyOn(ctx, tj, first)

		By("running the copy as Trainer, JobSet and the Job controller would: a JobSet, its Job, and a pod slow to stop")
		js, pod := runCopy(ctx, first, copy)

		By("evicting it on the manager: the JobSet stays, deleted in the foreground, while its pod stops")
		sim.EvictAndRequeue(ctx, wl)
		sim.ReserveQuota(ctx, wl)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, first, tj)).To(BeNil(), "the TrainJob copy")
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "the pod, deleted by the garbage collector")
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(js), js)).To(Succeed())
			g.Expect(js.GetFinalizers()).To(ContainElement(metav1.FinalizerDeleteDependents), "the JobSet, deleted in the foreground")
		}).Should(Succeed())
		expectNothingOn(ctx, second, wl, tj, 3*time.Second)

		By("dispatching it again once the pod has stopped, and the Job and the JobSet with it")
		Eventually(func(g Gomega) {
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			pod.Finalizers = nil
			g.Expect(first.Client.Update(ctx, pod)).To(Succeed())
		}).Should(Succeed())
		expectCopies(ctx, wl, first, second)
		Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(js), js)).To(MatchError(ContainSubstring("not found")), "the JobSet when the job went on")
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)
	})

	It("holds the job back when someone deletes its TrainJob copy in the background on the worker, until the copy's pods have stopped", func(ctx context.Context) {
		first, second := env.Workers[0], env.Workers[1]
		tj := trainJob(ns).Obj()
		wl := dispatchTo(ctx, tj, first)
		copy := expectTrainJobOnlyOn(ctx, tj, first)

		By("running the copy as Trainer, JobSet and the Job controller would, with a pod slow to stop")
		_, pod := runCopy(ctx, first, copy)

		By("deleting the copy on the worker in the background, as kubectl does: it goes at once, and the garbage collector deletes the rest after it")
		Expect(first.Client.Delete(ctx, copy, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, first, tj)).To(BeNil(), "the TrainJob copy")
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "the pod, deleted by the garbage collector")
		}).Should(Succeed())

		By("moving the job off the worker rather than making the copy again there, and sending it nowhere while the pod runs")
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, first.Name)
		sim.EvictAndRequeue(ctx, wl)
		sim.ReserveQuota(ctx, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, `worker "`+first.Name+`" before dispatching again. Pod `+ns+"/"+pod.Name+" has been deleting since ")
		for _, w := range env.Workers {
			expectNothingOn(ctx, w, wl, tj, time.Second)
		}

		By("dispatching it again once the pod has stopped")
		Eventually(func(g Gomega) {
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			pod.Finalizers = nil
			g.Expect(first.Client.Update(ctx, pod)).To(Succeed())
		}).Should(Succeed())
		expectCopies(ctx, wl, first, second)
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		expectTrainJobOnlyOn(ctx, tj, second)
	})
})

// runCopy makes what Trainer, JobSet and the Job controller make for a
// running TrainJob copy on worker: its JobSet, a Job of it, and a Running
// pod labelled with the JobSet's name, held by a finalizer as a pod is
// while its containers stop.
func runCopy(ctx context.Context, worker *framework.Cluster, copy *trainer.TrainJob) (*unstructured.Unstructured, *corev1.Pod) {
	GinkgoHelper()
	js := jobSetOf(copy)
	Expect(worker.Client.Create(ctx, js)).To(Succeed())
	job := jobOf(js)
	Expect(worker.Client.Create(ctx, job)).To(Succeed())
	pod := podOf(job)
	pod.Labels = map[string]string{jobset.JobSetNameKey: copy.Name}
	Expect(worker.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	Expect(worker.Client.Status().Update(ctx, pod)).To(Succeed())
	return js, pod
}

// expectNothingOn asserts that, for the while given, worker gets neither a
// copy of wl nor the job tj: the job is held back.
func expectNothingOn(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload, tj *trainer.TrainJob, while time.Duration) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		g.Expect(kueuesim.Read(ctx, g, worker, wl)).To(BeNil(), "a copy on %s", worker.Name)
		g.Expect(kueuesim.Read(ctx, g, worker, tj)).To(BeNil(), "the job on %s", worker.Name)
	}).WithTimeout(while).Should(Succeed())
}

// jobSetOf is the JobSet Trainer makes for a TrainJob copy: of its name,
// controlled by it, with the finalizers given: one holds it as a worker
// whose garbage collector is down would.
func jobSetOf(tj *trainer.TrainJob, finalizers ...string) *unstructured.Unstructured {
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "node", "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never", "containers": []any{map[string]any{"name": "node", "image": "busybox"}},
			}}}},
		}}},
	}}
	js.SetName(tj.Name)
	js.SetNamespace(tj.Namespace)
	js.SetFinalizers(finalizers)
	js.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(tj, trainer.GroupVersion.WithKind(trainer.TrainJobKind))})
	return js
}

// jobOf is a Job the JobSet controller makes for js.
func jobOf(js *unstructured.Unstructured) *batchv1.Job {
	job := batch.MakeJob(js.GetName()+"-node-0", js.GetNamespace()).Obj()
	job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(js, js.GroupVersionKind())}
	return job
}

// podOf is a pod the Job controller makes for job, here held by a
// finalizer, as a pod is while its containers stop.
func podOf(job *batchv1.Job) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-0", Namespace: job.Namespace, Finalizers: []string{"test.courier.dev/hold"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "node", Image: "busybox"}}},
	}
}
