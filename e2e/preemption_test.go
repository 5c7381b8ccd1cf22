package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	batchtesting "github.com/courierdev/courier/pkg/testing/batch"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// priorityLabel names a job's Kueue WorkloadPriorityClass; it travels with
// Courier's copy, so that the worker's Kueue ranks the copy the same.
const priorityLabel = "kueue.x-k8s.io/priority-class"

// The suite's two WorkloadPriorityClasses, on every cluster.
const (
	lowPriority  = "courier-e2e-low"
	highPriority = "courier-e2e-high"
)

// holdGate keeps pods unscheduled, so that their job holds its quota until
// the spec ends.
const holdGate = "example.com/hold"

// preemptionQueues gives the spec a namespace of its own on every cluster,
// with LocalQueue lq into a ClusterQueue of the same name that preempts
// lower priorities: on each worker it holds workerGPUs, on the manager
// managerGPUs behind a Courier check of the same name, whose DispatchPolicy
// sends BestFit's copies to fanOut workers. It returns the namespace.
func preemptionQueues(ctx context.Context, managerGPUs, workerGPUs int64, fanOut int32) string {
	GinkgoHelper()
	for _, c := range append([]cluster{manager}, workers...) {
		for name, value := range map[string]int32{lowPriority: 100, highPriority: 10000} {
			pc := &kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
			if err := c.client.Create(ctx, pc); !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred(), "creating WorkloadPriorityClass %s on %s", name, c.name)
			}
		}
	}
	ns := queuesIn(ctx, "prio", specQueues{managerGPUs: managerGPUs, workerGPUs: workerGPUs, preempt: true})
	var names []string
	for _, w := range workers {
		names = append(names, w.name)
	}
	courierCheck(ctx, ns, courierv1alpha1.DispatchPolicySpec{Clusters: names, Strategy: courierv1alpha1.BestFit, FanOut: &fanOut})
	return ns
}

// prioritised is a one-GPU TrainJob of the given priority, for the
// manager's queue in ns.
func prioritised(name, ns, priority string) *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob(name+"-"+rand.String(5), ns).Queue(queue).Label(priorityLabel, priority).
		ManagedBy(adapter.TrainJobManagedBy).GPUs(1)
}

// otherWorker is the worker of the suite's first two that is not w.
func otherWorker(w cluster) cluster {
	if w.name == workers[0].name {
		return workers[1]
	}
	return workers[0]
}

// remoteEvictions lists the RemoteEvicted warnings on a manager job.
func remoteEvictions(ctx context.Context, job client.Object) []string {
	var out []string
	for _, w := range warningsOn(ctx, job) {
		if strings.HasPrefix(w, courierv1alpha1.EventRemoteEvicted+": ") {
			out = append(out, w)
		}
	}
	return out
}

// evictedOn lists the Workloads in ns on worker w that its Kueue evicted
// for reason, by name.
func evictedOn(ctx context.Context, g Gomega, w cluster, ns, reason string) []string {
	list := &kueue.WorkloadList{}
	g.Expect(w.client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, wl := range list.Items {
		if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted); c != nil && c.Reason == reason {
			out = append(out, wl.Name)
		}
	}
	return out
}

// releasePods lifts holdGate from the pods in ns on worker w, once there
// are some.
func releasePods(ctx context.Context, w cluster, ns string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(w.client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty(), "pods in %s on %s", ns, w.name)
		for i := range pods.Items {
			pod := &pods.Items[i]
			if slices.ContainsFunc(pod.Spec.SchedulingGates, func(gate corev1.PodSchedulingGate) bool { return gate.Name == holdGate }) {
				pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(gate corev1.PodSchedulingGate) bool { return gate.Name == holdGate })
				g.Expect(w.client.Update(ctx, pod)).To(Succeed())
			}
		}
	}).Should(Succeed())
}

var _ = Describe("Preemption across workers, with real Kueue", func() {
	It("moves a TrainJob its worker's Kueue preempts for a local job of higher priority, and runs it to its end once, elsewhere", func(ctx context.Context) {
		ns := preemptionQueues(ctx, 4, 1, 1)
		// Its pods wait at a gate the spec lifts once the job has moved, so
		// that it runs nowhere before, on kind's busybox pods as on kwok's.
		tj := prioritised("bumped", ns, lowPriority).HoldPods("example.com/scheduler").RunFor("example.com/user", 5*time.Second).Obj()
		Expect(manager.client.Create(ctx, tj)).To(Succeed())
		wl := workloadOf(ctx, tj)
		first := dispatchedTo(ctx, wl)
		expectOnlyOn(ctx, tj, first)

		By("starting a job of " + first.name + "'s own, of higher priority, that needs the TrainJob's GPU")
		local := batchtesting.MakeJob("local-"+rand.String(5), ns).Queue(queue).Label(priorityLabel, highPriority).
			Request(gpuResource, "1").SchedulingGate(holdGate).Obj()
		Expect(first.client.Create(ctx, local)).To(Succeed())

		By("moving the TrainJob to the other worker, and telling its owner why")
		second := otherWorker(first)
		Eventually(func(g Gomega) {
			got := &kueue.Workload{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
			g.Expect(got.Status.ClusterName).To(HaveValue(Equal(second.name)), "%s", workloadState(got))
			var moves []workload.Move
			g.Expect(json.Unmarshal([]byte(got.Annotations[courierv1alpha1.MovesAnnotation]), &moves)).To(Succeed())
			g.Expect(moves).To(ConsistOf(And(HaveField("Cluster", first.name), HaveField("Reason", "Preempted"))))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		expectOnlyOn(ctx, tj, second)
		Expect(remoteEvictions(ctx, tj)).To(ConsistOf(HavePrefix(fmt.Sprintf(`RemoteEvicted: Worker %q evicted the workload (Preempted`, first.name))))
		Eventually(func(g Gomega) {
			g.Expect(evictedOn(ctx, g, first, ns, "Preempted")).To(BeEmpty(), "the preempted copy is removed from %s", first.name)
		}).Should(Succeed())

		By("finishing it on the other worker once its pods may run, its final status mirrored")
		releasePods(ctx, second, ns)
		Eventually(func(g Gomega) {
			expectFinished(ctx, g, wl, kueue.WorkloadFinishedReasonSucceeded)
			got := &trainer.TrainJob{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, trainer.TrainJobComplete)).To(BeTrue())
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(remoteEvictions(ctx, tj)).To(HaveLen(1), "moved once")
	})

	It("lets one worker at a time preempt for a job of higher priority sent to two, when no worker has room", func(ctx context.Context) {
		ns := preemptionQueues(ctx, 4, 1, 2)
		lows := map[string]*trainer.TrainJob{}
		for range 2 {
			tj := prioritised("low", ns, lowPriority).HoldPods("example.com/user").Obj()
			Expect(manager.client.Create(ctx, tj)).To(Succeed())
			w := dispatchedTo(ctx, workloadOf(ctx, tj))
			Expect(lows).NotTo(HaveKey(w.name), "a worker with one GPU took two one-GPU jobs")
			lows[w.name] = tj
			expectOnlyOn(ctx, tj, w)
		}

		By("submitting a job of higher priority that no worker has room for")
		high := prioritised("high", ns, highPriority).HoldPods("example.com/user").Obj()
		Expect(manager.client.Create(ctx, high)).To(Succeed())
		preemptor := dispatchedTo(ctx, workloadOf(ctx, high))
		expectOnlyOn(ctx, high, preemptor)
		kept := otherWorker(preemptor)

		By("having evicted the job of " + preemptor.name + " only")
		Eventually(func(g Gomega) {
			g.Expect(remoteEvictions(ctx, lows[preemptor.name])).To(ConsistOf(HavePrefix(fmt.Sprintf(`RemoteEvicted: Worker %q evicted the workload (Preempted`, preemptor.name))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(remoteEvictions(ctx, lows[kept.name])).To(BeEmpty())
			g.Expect(evictedOn(ctx, g, kept, ns, "Preempted")).To(BeEmpty(), "Workloads %s's Kueue preempted", kept.name)
			g.Expect(exists(ctx, g, kept, lows[kept.name])).To(BeTrue())
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	It("stops a job on its worker when the manager's Kueue preempts it for one of higher priority", func(ctx context.Context) {
		ns := preemptionQueues(ctx, 1, 1, 1)
		low := prioritised("low", ns, lowPriority).HoldPods("example.com/user").Obj()
		Expect(manager.client.Create(ctx, low)).To(Succeed())
		lowWl := workloadOf(ctx, low)
		expectOnlyOn(ctx, low, dispatchedTo(ctx, lowWl))

		By("submitting a job of higher priority that the manager's quota holds only without it")
		high := prioritised("high", ns, highPriority).HoldPods("example.com/user").Obj()
		Expect(manager.client.Create(ctx, high)).To(Succeed())
		expectOnlyOn(ctx, high, dispatchedTo(ctx, workloadOf(ctx, high)))

		By("removing the preempted job's copy from its worker, the job waiting on the manager")
		Eventually(func(g Gomega) {
			got := &kueue.Workload{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(lowWl), got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, kueue.WorkloadQuotaReserved)).To(BeFalse(), "%s", workloadState(got))
			evicted := meta.FindStatusCondition(got.Status.Conditions, kueue.WorkloadEvicted)
			g.Expect(evicted).To(HaveField("Reason", kueue.WorkloadEvictedByPreemption), "%s", workloadState(got))
			for _, w := range workers {
				g.Expect(exists(ctx, g, w, low)).To(BeFalse(), "%s on %s", low.Name, w.name)
			}
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, w := range workers {
				g.Expect(exists(ctx, g, w, low)).To(BeFalse(), "%s on %s", low.Name, w.name)
			}
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})
})
