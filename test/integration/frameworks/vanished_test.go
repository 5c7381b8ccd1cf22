package frameworks

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/test/integration/kueuesim"
)

// runningPodOf is a pod the worker's Job controller runs for a Job copy:
// labelled with the Job's name, controlled by it, Running, and held by a
// finalizer, as a pod is while its containers stop.
func runningPodOf(ctx context.Context, c client.Client, job *unstructured.Unstructured) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.GetName() + "-0", Namespace: job.GetNamespace(),
			Labels:          map[string]string{batchv1.JobNameLabel: job.GetName()},
			Finalizers:      []string{"test.courier.dev/hold"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	Expect(c.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	Expect(c.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

var _ = Describe("A job copy someone deletes on its worker", func() {
	It("holds a batch Job whose copy was deleted in the background on its worker until that copy's pod has stopped", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		first, second := env.Workers[0], env.Workers[1]
		job := batchJob(ns, "job-"+rand.String(5), nil)
		wl := sim.Submit(ctx, job)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, first, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, first, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, first.Name)
		var copy *unstructured.Unstructured
		Eventually(func(g Gomega) {
			copy = kueuesim.Read(ctx, g, first, job)
			g.Expect(copy).NotTo(BeNil())
		}).Should(Succeed())

		By("running a pod of the copy, slow to stop, and deleting the copy in the background, as kubectl does")
		pod := runningPodOf(ctx, first.Client, copy)
		Expect(first.Client.Delete(ctx, copy, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())

		By("finishing the Workload copy as the worker's Kueue does for a job being deleted; Courier moves the job off and lets the copy go, its pod left to the garbage collector")
		kueuesim.SetRemoteCondition(ctx, first, wl, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue,
			Reason: kueue.WorkloadFinishedReasonOwnerNotFound, Message: "The owner of the Workload is being deleted"})
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, "")
		sim.EvictAndRequeue(ctx, wl)
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, first, job)).To(BeNil(), "the Job copy")
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "the pod, deleted by the garbage collector")
		}).Should(Succeed())

		By("sending the job nowhere while the pod runs, saying so")
		sim.ReserveQuota(ctx, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending,
			`worker "`+first.Name+`" before dispatching again. Pod `+ns+"/"+pod.Name+" has been deleting since ")
		Consistently(func(g Gomega) {
			for _, w := range env.Workers {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).To(BeNil(), "a Workload copy on %s", w.Name)
				g.Expect(kueuesim.Read(ctx, g, w, job)).To(BeNil(), "the job on %s", w.Name)
			}
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("dispatching it again once the pod has stopped")
		Eventually(func(g Gomega) {
			g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			pod.Finalizers = nil
			g.Expect(first.Client.Update(ctx, pod)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, second, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, second, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, second.Name)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, second, job)).NotTo(BeNil()) }).Should(Succeed())
	})
})
