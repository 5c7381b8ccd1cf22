package badinput

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// longName is n characters of a valid name.
func longName(n int) string {
	return "a" + strings.Repeat("x", n-1)
}

var _ = DescribeTable("A batch Job whose managedBy is not Courier's",
	func(ctx context.Context, managedBy string) {
		ns := namespaceEverywhere(ctx)
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "job-" + rand.String(5), "namespace": ns},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}},
		}}
		if managedBy != "" {
			Expect(unstructured.SetNestedField(job.Object, managedBy, "spec", "managedBy")).To(Succeed())
		}
		wl := sim.Submit(ctx, job)
		want := `Job ` + ns + `/` + job.GetName() + ` has spec.managedBy "` + managedBy + `"; set it to "courier.dev/dispatcher" when creating the job`
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRejected, want)
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventRejected, want)
		Consistently(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty()) }).WithTimeout(2 * time.Second).Should(Succeed())
	},
	Entry("none, so the manager's Job controller would run it too", ""),
	Entry("MultiKueue's", "kueue.x-k8s.io/multikueue"),
)

// workerQuota gives namespace ns on worker a LocalQueue "lq" in a
// ClusterQueue of its own with a nominal quota of one resource, and waits
// until Courier sees it.
func workerQuota(ctx context.Context, worker *framework.Cluster, ns string, res corev1.ResourceName, nominal string) {
	GinkgoHelper()
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := worker.Client.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(worker.Client.Create(ctx, kueuetesting.MakeClusterQueue(ns).Quota("default", res, nominal).Obj())).To(Succeed())
	Expect(worker.Client.Create(ctx, kueuetesting.MakeLocalQueue("lq", ns, ns).Obj())).To(Succeed())
	Eventually(func(g Gomega) {
		remote, err := courier.Cache.Get(worker.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.Capacity(ns, "lq").Known).To(BeTrue(), "capacity of %s on %s", ns, worker.Name)
	}).Should(Succeed())
}

var _ = Describe("A quota no worker can ever satisfy", func() {
	It("rejects a workload asking for a resource no worker's queue covers, with NoCapacity", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		for _, w := range env.Workers {
			workerQuota(ctx, w, ns, "nvidia.com/gpu", "8")
		}
		check, _ := policyCheck(ctx, courierv1alpha1.DispatchPolicySpec{})
		wl := check.Submit(ctx, trainJob(ns).Obj())
		got := check.ExpectCheck(ctx, wl, kueue.CheckStateRejected, "No worker's quota could ever hold the whole workload")
		Expect(check.CheckState(got).Message).To(ContainSubstring("cpu"))
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventNoCapacity, "cpu")
		Expect(got.Status.NominatedClusterNames).To(BeEmpty())
		Consistently(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty()) }).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

var _ = DescribeTable("A job and Workload with names at the limits",
	func(ctx context.Context, workloadNameLength int, asLabel bool) {
		ns := namespaceEverywhere(ctx)
		job := plainJob(ns, longName(workloadNameLength-len("plainjob-")))
		wl := sim.Submit(ctx, job)
		Expect(wl.Name).To(HaveLen(workloadNameLength))
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(HaveLen(2)) }).Should(Succeed())
		target := env.Workers[0]
		kueuesim.AdmitOn(ctx, target, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)
		var remote *unstructured.Unstructured
		Eventually(func(g Gomega) {
			remote = kueuesim.Read(ctx, g, target, job)
			g.Expect(remote).NotTo(BeNil())
		}).Should(Succeed())
		// The worker's Kueue finds the prebuilt Workload by this marker.
		if asLabel {
			Expect(remote.GetLabels()).To(HaveKeyWithValue(adapter.PrebuiltWorkloadLabel, wl.Name))
			Expect(remote.GetAnnotations()).NotTo(HaveKey(adapter.PrebuiltWorkloadAnnotation))
		} else {
			Expect(remote.GetAnnotations()).To(HaveKeyWithValue(adapter.PrebuiltWorkloadAnnotation, wl.Name))
			Expect(remote.GetLabels()).NotTo(HaveKey(adapter.PrebuiltWorkloadLabel))
		}

		By("mirroring its status and removing its copies when it is deleted")
		Eventually(func(g Gomega) {
			remote = kueuesim.Read(ctx, g, target, job)
			remote.Object["status"] = map[string]any{"phase": "Running"}
			g.Expect(target.Client.Update(ctx, remote)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, env.Manager, job).Object["status"]).To(Equal(map[string]any{"phase": "Running"}))
		}).Should(Succeed())
		Expect(env.Manager.Client.Delete(ctx, job)).To(Succeed())
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wl))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty()) }).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, target, job)).To(BeNil()) }).Should(Succeed())
	},
	Entry("a Workload name of 63 characters, the most a label value holds", 63, true),
	Entry("a Workload name of 64 characters, in an annotation", 64, false),
	Entry("a Workload name of 253 characters, the most an object name holds", 253, false),
)

var _ = Describe("A very large status on a worker's job", func() {
	It("is mirrored once to the manager's job, without a loop of writes", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		job := plainJob(ns, "big-"+rand.String(5))
		wl := sim.Submit(ctx, job)
		// Its copy holds Courier's finalizer: left running, it would hold
		// up the removal of the PlainJob CRD in another spec.
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, job))).To(Succeed())
			Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wl))).To(Succeed())
			Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, env.Workers[1], job)).To(BeNil()) }).Should(Succeed())
		})
		Eventually(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(HaveLen(2)) }).Should(Succeed())
		target := env.Workers[1]
		kueuesim.AdmitOn(ctx, target, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)

		// etcd takes requests of up to 1.5 MiB: a status of 1.2 MB leaves
		// room for the rest of the object on both sides.
		blob := strings.Repeat("x", 1_200_000)
		Eventually(func(g Gomega) {
			remote := kueuesim.Read(ctx, g, target, job)
			g.Expect(remote).NotTo(BeNil())
			remote.Object["status"] = map[string]any{"phase": "Running", "log": blob}
			g.Expect(target.Client.Update(ctx, remote)).To(Succeed())
		}).Should(Succeed())
		var mirrored string
		Eventually(func(g Gomega) {
			local := kueuesim.Read(ctx, g, env.Manager, job)
			log, _, _ := unstructured.NestedString(local.Object, "status", "log")
			g.Expect(log).To(HaveLen(len(blob)))
			mirrored = local.GetResourceVersion()
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, env.Manager, job).GetResourceVersion()).To(Equal(mirrored))
		}).WithTimeout(3*time.Second).Should(Succeed(), "the mirror wrote the manager's job again")
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)
	})
})

var _ = DescribeTable("A Workload Courier cannot dispatch",
	func(ctx context.Context, owner func(ns string) *unstructured.Unstructured, want func(wl *kueue.Workload) string) {
		ns := namespaceEverywhere(ctx)
		var wl *kueue.Workload
		if owner == nil {
			wl = kueuetesting.MakeWorkload("ownerless-"+rand.String(5), ns).Queue("lq").Obj()
			Expect(env.Manager.Client.Create(ctx, wl)).To(Succeed())
			sim.ReserveQuota(ctx, wl)
		} else {
			wl = sim.Submit(ctx, owner(ns))
		}
		sim.ExpectCheck(ctx, wl, kueue.CheckStateRejected, want(wl))
		expectWorkloadEvent(ctx, wl, courierv1alpha1.EventRejected, want(wl))
		Consistently(func(g Gomega) { g.Expect(copiesOn(ctx, g, wl)).To(BeEmpty()) }).WithTimeout(2 * time.Second).Should(Succeed())
	},
	Entry("one without an owning job", nil, func(wl *kueue.Workload) string {
		return "Workload " + wl.Namespace + "/" + wl.Name + " has no owning job; Courier dispatches only jobs."
	}),
	Entry("one owned by a kind missing from the configuration", func(ns string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
			"metadata": map[string]any{"name": "js-" + rand.String(5), "namespace": ns},
			"spec": map[string]any{"managedBy": "courier.dev/dispatcher", "replicatedJobs": []any{map[string]any{"name": "w", "replicas": int64(1),
				"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}}}}},
		}}
	}, func(*kueue.Workload) string {
		return "Courier does not dispatch JobSet.jobset.x-k8s.io; add JobSet.v1alpha2.jobset.x-k8s.io to the configuration's externalFrameworks."
	}),
)
