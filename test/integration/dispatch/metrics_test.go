package dispatch

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// registered sums, over the series of a metric in controller-runtime's
// registry (what the metrics endpoint serves) that carry the given labels,
// a counter's or gauge's value, or a histogram's count and sum.
func registered(g Gomega, name string, labels map[string]string) (value, sum float64) {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			value += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return value, sum
}

var _ = Describe("Metrics", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = namespaceEverywhere(ctx) })

	It("count a dispatch, its admission and its wait, and time it from the quota reservation", func(ctx context.Context) {
		worker := pool[1]
		on := map[string]string{"cluster": worker.Name}
		dispatchedBefore, _ := registered(Default, "courier_workloads_dispatched_total", on)
		admittedBefore, _ := registered(Default, "courier_workloads_admitted_total", on)
		latencyBefore, latencySumBefore := registered(Default, "courier_dispatch_latency_seconds", on)

		start := time.Now()
		wl := sim.Submit(ctx, trainJob(ns).Obj())
		expectCopies(ctx, wl, pool...)
		By("counting the workload as pending on Courier's check while no worker admitted it")
		Eventually(func(g Gomega) {
			pending, _ := registered(g, "courier_pending_workloads", map[string]string{"check": checkName})
			g.Expect(pending).To(BeNumerically(">=", 1))
		}).Should(Succeed())

		kueuesim.AdmitOn(ctx, worker, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, worker.Name)
		elapsed := time.Since(start)

		By("counting the job copy created and the admission taken on the worker, and observing the latency once")
		Eventually(func(g Gomega) {
			dispatched, _ := registered(g, "courier_workloads_dispatched_total", on)
			g.Expect(dispatched - dispatchedBefore).To(BeEquivalentTo(1))
			admitted, _ := registered(g, "courier_workloads_admitted_total", on)
			g.Expect(admitted - admittedBefore).To(BeEquivalentTo(1))
			latency, latencySum := registered(g, "courier_dispatch_latency_seconds", on)
			g.Expect(latency - latencyBefore).To(BeEquivalentTo(1))
			// The reservation time has a resolution of a second.
			g.Expect(latencySum - latencySumBefore).To(BeNumerically("<=", (elapsed + time.Second).Seconds()))
		}).Should(Succeed())
	})

	It("count an eviction by the worker as a re-dispatch, and a deactivation on the manager as its eviction", func(ctx context.Context) {
		worker := pool[0]
		evicted := func(g Gomega, direction string) float64 {
			v, _ := registered(g, "courier_workloads_evicted_total", map[string]string{"cluster": worker.Name, "direction": direction})
			return v
		}
		redispatched := func(g Gomega) float64 {
			v, _ := registered(g, "courier_workloads_redispatched_total", map[string]string{"cluster": worker.Name, "reason": courierv1alpha1.EventRemoteEvicted})
			return v
		}
		byWorker, byManager, again := evicted(Default, metrics.DirectionWorker), evicted(Default, metrics.DirectionManager), redispatched(Default)

		By("the worker evicting its copy")
		wl := dispatchTo(ctx, trainJob(ns).Obj(), worker)
		kueuesim.SetRemoteCondition(ctx, worker, wl, metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted", Message: "preempted"})
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRetry, `Worker "`+worker.Name+`" evicted the workload`)
		Eventually(func(g Gomega) {
			g.Expect(redispatched(g) - again).To(BeEquivalentTo(1))
			g.Expect(evicted(g, metrics.DirectionWorker) - byWorker).To(BeEquivalentTo(1))
		}).Should(Succeed())

		By("the manager deactivating a dispatched workload")
		tj := trainJob(ns).Obj()
		wl = dispatchTo(ctx, tj, worker)
		expectTrainJobOnlyOn(ctx, tj, worker)
		Expect(env.Manager.Client.Patch(ctx, wl, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"active":false}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, worker, tj)).To(BeNil())
			g.Expect(evicted(g, metrics.DirectionManager) - byManager).To(BeEquivalentTo(1))
		}).Should(Succeed())
		Expect(evicted(Default, metrics.DirectionWorker)-byWorker).To(BeEquivalentTo(1), "the manager's eviction is not the worker's")
	})

	It("count the watch events Courier reads from the manager and from each worker, with their bytes", func(ctx context.Context) {
		worker := pool[0]
		workloads := map[string]string{"kind": "Workload.kueue.x-k8s.io"}
		copies := map[string]string{"cluster": worker.Name, "kind": "TrainJob.trainer.kubeflow.org"}
		managerBefore, _ := registered(Default, "courier_manager_watch_events_total", workloads)
		managerBytesBefore, _ := registered(Default, "courier_manager_watch_event_bytes_total", workloads)
		remoteBefore, _ := registered(Default, "courier_remote_watch_events_total", copies)
		remoteBytesBefore, _ := registered(Default, "courier_remote_watch_event_bytes_total", copies)

		tj := trainJob(ns).Obj()
		dispatchTo(ctx, tj, worker)
		expectTrainJobOnlyOn(ctx, tj, worker)

		By("counting at least the Workload's create and its check's Ready on the manager, and the copy's create on the worker")
		Eventually(func(g Gomega) {
			events, _ := registered(g, "courier_manager_watch_events_total", workloads)
			bytes, _ := registered(g, "courier_manager_watch_event_bytes_total", workloads)
			g.Expect(events - managerBefore).To(BeNumerically(">=", 2))
			// A Workload's event is its whole object: hundreds of bytes.
			g.Expect(bytes - managerBytesBefore).To(BeNumerically(">=", 200*(events-managerBefore)))
			events, _ = registered(g, "courier_remote_watch_events_total", copies)
			bytes, _ = registered(g, "courier_remote_watch_event_bytes_total", copies)
			g.Expect(events - remoteBefore).To(BeNumerically(">=", 1))
			g.Expect(bytes - remoteBytesBefore).To(BeNumerically(">=", 200*(events-remoteBefore)))
		}).Should(Succeed())
	})
})
