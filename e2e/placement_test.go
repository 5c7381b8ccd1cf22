package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// setGPUQuota sets the nominal GPU quota of a worker's ClusterQueue "cq"
// and returns the one it had.
func setGPUQuota(ctx context.Context, w cluster, gpus int64) resource.Quantity {
	GinkgoHelper()
	var before resource.Quantity
	Eventually(func(g Gomega) {
		cq := &kueue.ClusterQueue{}
		g.Expect(w.client.Get(ctx, client.ObjectKey{Name: "cq"}, cq)).To(Succeed())
		for i, r := range cq.Spec.ResourceGroups[0].Flavors[0].Resources {
			if r.Name == "nvidia.com/gpu" {
				before = r.NominalQuota
				cq.Spec.ResourceGroups[0].Flavors[0].Resources[i].NominalQuota = *resource.NewQuantity(gpus, resource.DecimalSI)
			}
		}
		g.Expect(w.client.Update(ctx, cq)).To(Succeed())
	}).Should(Succeed())
	return before
}

var _ = Describe("Placement by room, with real Kueue", func() {
	It("sends jobs where there is room, and none waits while another worker has room", func(ctx context.Context) {
		big, small := workers[0], workers[1]
		quotas := map[string]int64{big.name: 6, small.name: 2}
		// The room counted below is all of each worker's quota: an earlier
		// spec's copy still going (a TrainJob copy is deleted in the
		// background, its Workload copy after it) would hold some of it.
		// Courier's capacity summary cannot tell: it is rewritten at most
		// every 10 s. So ask the workers.
		By("waiting until no earlier job holds quota on the workers")
		Eventually(func(g Gomega) {
			for _, w := range []cluster{big, small} {
				wls := &kueue.WorkloadList{}
				g.Expect(w.client.List(ctx, wls, client.InNamespace(namespace), client.HasLabels{courierv1alpha1.OriginLabel})).To(Succeed())
				g.Expect(wls.Items).To(BeEmpty(), "Workload copies on %s", w.name)
				cq := &kueue.ClusterQueue{}
				g.Expect(w.client.Get(ctx, client.ObjectKey{Name: "cq"}, cq)).To(Succeed())
				g.Expect(cq.Status.ReservingWorkloads).To(BeZero(), "ClusterQueue cq on %s: workloads holding quota", w.name)
			}
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		for _, w := range []cluster{big, small} {
			before := setGPUQuota(ctx, w, quotas[w.name])
			DeferCleanup(func(ctx context.Context) { setGPUQuota(ctx, w, before.Value()) })
		}
		By("waiting until Courier shows the workers' new quotas")
		Eventually(func(g Gomega) {
			for _, w := range []cluster{big, small} {
				wc := &courierv1alpha1.WorkerCluster{}
				g.Expect(manager.client.Get(ctx, client.ObjectKey{Name: w.name}, wc)).To(Succeed())
				g.Expect(wc.Status.CapacitySummary).To(ContainSubstring(fmt.Sprintf("nvidia.com/gpu 0/%d", quotas[w.name])), "WorkerCluster %s: no GPU in use, the new quota", w.name)
			}
		}).Should(Succeed())

		By("submitting 8 one-GPU TrainJobs whose pods hold their GPUs, all at once")
		run := rand.String(5)
		DeferCleanup(deleteRun, run)
		var wls []*kueue.Workload
		var jobs []*trainer.TrainJob
		for i := range 8 {
			tj := trainertesting.MakeTrainJob(fmt.Sprintf("room-%s-%d", run, i), namespace).Queue(queue).Label(runLabel, run).
				ManagedBy(adapter.TrainJobManagedBy).GPUs(1).HoldPods("example.com/user").Obj()
			Expect(manager.client.Create(ctx, tj)).To(Succeed())
			jobs = append(jobs, tj)
		}
		for _, tj := range jobs {
			wls = append(wls, workloadOf(ctx, tj))
		}

		// BestFit widens after a minute's round; every job running well
		// before that means none waited in a full worker's queue.
		By("running every job within the first round, 6 on the big worker and 2 on the small one")
		placed := map[string]int{}
		Eventually(func(g Gomega) {
			placed = map[string]int{}
			for _, wl := range wls {
				got := &kueue.Workload{}
				g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
				g.Expect(got.Status.ClusterName).NotTo(BeNil(), "%s waits: %s", wl.Name, checkMessage(got))
				placed[*got.Status.ClusterName]++
			}
		}).WithTimeout(45 * time.Second).Should(Succeed())
		Expect(placed).To(Equal(map[string]int{big.name: 6, small.name: 2}))
		for _, tj := range jobs {
			w := dispatchedTo(ctx, workloadOf(ctx, tj))
			expectOnlyOn(ctx, tj, w)
		}

		By("holding a ninth job while no worker has room, saying why")
		ninth := trainertesting.MakeTrainJob("room-"+run+"-8", namespace).Queue(queue).Label(runLabel, run).
			ManagedBy(adapter.TrainJobManagedBy).GPUs(1).HoldPods("example.com/user").Obj()
		Expect(manager.client.Create(ctx, ninth)).To(Succeed())
		wl := workloadOf(ctx, ninth)
		Eventually(func(g Gomega) {
			got := &kueue.Workload{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
			g.Expect(checkMessage(got)).To(ContainSubstring("Nominated"))
		}).Should(Succeed())
		var waitsOn []string
		Consistently(func(g Gomega) {
			got := &kueue.Workload{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
			g.Expect(got.Status.ClusterName).To(BeNil())
			waitsOn = got.Status.NominatedClusterNames
		}).WithTimeout(5 * time.Second).Should(Succeed())
		Expect(waitsOn).To(HaveLen(1), "BestFit's first round nominates one worker")

		// Its round lasts a minute; room appearing on the other worker is
		// its at once.
		By("running the ninth job on the other worker within seconds of a job there ending")
		other := big
		if waitsOn[0] == big.name {
			other = small
		}
		for i, tj := range jobs {
			if *dispatchedWorkload(ctx, wls[i]).Status.ClusterName == other.name {
				Expect(manager.client.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
				break
			}
		}
		Eventually(func(g Gomega) {
			got := &kueue.Workload{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
			g.Expect(got.Status.ClusterName).To(HaveValue(Equal(other.name)), "%s waits: %s", wl.Name, checkMessage(got))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		expectOnlyOn(ctx, ninth, other)
	})
})

// dispatchedWorkload reads a manager Workload that Courier dispatched.
func dispatchedWorkload(ctx context.Context, wl *kueue.Workload) *kueue.Workload {
	GinkgoHelper()
	got := &kueue.Workload{}
	Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
	Expect(got.Status.ClusterName).NotTo(BeNil(), "%s is not dispatched", wl.Name)
	return got
}

// checkMessage is Courier's check's state and message on a Workload.
func checkMessage(wl *kueue.Workload) string {
	var out []string
	for _, c := range wl.Status.AdmissionChecks {
		if c.Name == checkName {
			out = append(out, string(c.State)+": "+c.Message)
		}
	}
	return strings.Join(out, "; ")
}
