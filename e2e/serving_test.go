package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jobsettesting "github.com/courierdev/courier/pkg/testing/jobset"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// gpuResource is the extended resource the suite's TrainJobs ask for.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// servingTimeout bounds the wait for a worker's nodes and webhooks: on kind
// a restarted worker starts its peers' pods again only after its API
// server, and their webhooks serve a while after that.
const servingTimeout = 4 * time.Minute

// workerGPUs is each worker's allocatable GPUs when the suite started: a
// worker brought back must have them again before a spec counts on them.
var workerGPUs = map[string]int64{}

// recordServing waits until every worker serves (awaitServing) and records
// its GPUs, which must be more than none: the suite's jobs ask for them.
func recordServing(ctx context.Context) {
	GinkgoHelper()
	for _, w := range workers {
		Eventually(func(g Gomega) {
			gpus := readyGPUs(ctx, g, w)
			g.Expect(gpus).To(BeNumerically(">", 0), "allocatable %s on %s", gpuResource, w.name)
			workerGPUs[w.name] = gpus
		}).WithTimeout(servingTimeout).Should(Succeed())
		awaitAdmitted(ctx, w, servingProbes()...)
	}
}

// awaitServing waits until a worker brought back serves what the specs
// after need: its nodes Ready with the GPUs it had, and its peers' webhooks
// admitting what Courier and the suite create there. Nothing is created
// until then, and nothing is retried after: a failure past this point is
// the spec's to report.
func awaitServing(ctx context.Context, w cluster) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(readyGPUs(ctx, g, w)).To(Equal(workerGPUs[w.name]), "allocatable %s on %s", gpuResource, w.name)
	}).WithTimeout(servingTimeout).Should(Succeed())
	awaitAdmitted(ctx, w, servingProbes()...)
}

// readyGPUs checks that every node of w is Ready and returns their
// allocatable GPUs.
func readyGPUs(ctx context.Context, g Gomega, w cluster) int64 {
	nodes := &corev1.NodeList{}
	g.Expect(w.client.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty(), "%s has no node", w.name)
	var gpus resource.Quantity
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		g.Expect(ready).To(BeTrue(), "node %s of %s is not Ready", n.Name, w.name)
		for _, t := range n.Spec.Taints {
			g.Expect(t.Key).NotTo(BeElementOf(corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady), "node %s of %s", n.Name, w.name)
		}
		if q, ok := n.Status.Allocatable[gpuResource]; ok {
			gpus.Add(q)
		}
	}
	return gpus.Value()
}

// servingProbes are one object of each kind Courier and the worker's peers
// create on a worker, each going through a different peer's webhooks:
// Kueue's for Workloads and pods, Trainer's and Kueue's for TrainJobs,
// JobSet's for JobSets.
func servingProbes() []client.Object {
	name := "e2e-probe-" + rand.String(5)
	return []client.Object{
		kueuetesting.MakeWorkload(name, namespace).Queue(queue).Obj(),
		trainertesting.MakeTrainJob(name, namespace).Queue(queue).GPUs(1).Obj(),
		jobsettesting.MakeJobSet(name, namespace).ReplicatedJob("w", 1).Obj(),
		probePod(name),
	}
}

// probePod is a pod that runs until deleted.
func probePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "3600"}}}},
	}
}

// awaitAdmitted waits until c's admission webhooks admit each object: a
// server-side dry run of its create goes through the same webhooks and
// stores nothing. Only an unreachable webhook or API server is waited out;
// a refusal fails at once, as the real create would.
func awaitAdmitted(ctx context.Context, c cluster, objs ...client.Object) {
	GinkgoHelper()
	for _, obj := range objs {
		Eventually(func(g Gomega) {
			err := c.client.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsAlreadyExists(err) {
				StopTrying(fmt.Sprintf("%s refuses %T %s", c.name, obj, obj.GetName())).Wrap(err).Now()
			}
			g.Expect(err).NotTo(HaveOccurred(), "%s admitting %T %s", c.name, obj, obj.GetName())
		}).WithTimeout(servingTimeout).WithPolling(time.Second).Should(Succeed())
	}
}

// createAdmitted creates obj on c once, after c's webhooks admit it.
func createAdmitted(ctx context.Context, c cluster, obj client.Object) {
	GinkgoHelper()
	awaitAdmitted(ctx, c, obj)
	Expect(c.client.Create(ctx, obj)).To(Succeed(), "creating %T %s on %s", obj, obj.GetName(), c.name)
}
