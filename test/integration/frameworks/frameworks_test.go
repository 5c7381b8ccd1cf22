package frameworks

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

// namespaceEverywhere creates a namespace on the manager and every worker.
func namespaceEverywhere(ctx context.Context) string {
	ns, err := env.NamespaceEverywhere(ctx, "frameworks")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return ns
}

func object(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

func podTemplate(extra map[string]any) map[string]any {
	spec := map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}
	for k, v := range extra {
		spec[k] = v
	}
	return map[string]any{"spec": spec}
}

func batchJob(ns, name string, podSpec map[string]any) *unstructured.Unstructured {
	return object("batch/v1", "Job", ns, name, map[string]any{
		"managedBy": "courier.dev/dispatcher",
		"template":  podTemplate(podSpec),
	})
}

// kindCase is one job kind of the table.
type kindCase struct {
	make          func(ns, name string) *unstructured.Unstructured
	managedByPath []string
	// workers are the indexes of the workers that serve the kind.
	workers      []int
	remoteStatus map[string]any
	wantStatus   map[string]any
	// statusInObject is for a kind without a status subresource.
	statusInObject bool
}

var _ = DescribeTable("Dispatching an external framework",
	func(ctx context.Context, c kindCase) {
		ns := namespaceEverywhere(ctx)
		job := c.make(ns, "job-"+rand.String(5))
		wl := sim.Submit(ctx, job)
		var eligible, others []*framework.Cluster
		for i, w := range env.Workers {
			if containsIndex(c.workers, i) {
				eligible = append(eligible, w)
			} else {
				others = append(others, w)
			}
		}

		By("copying the Workload only to the workers that serve the kind")
		Eventually(func(g Gomega) {
			for _, w := range eligible {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).NotTo(BeNil(), "a copy on %s", w.Name)
			}
			for _, w := range others {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).To(BeNil(), "no copy on %s", w.Name)
			}
		}).Should(Succeed())
		for _, w := range others {
			sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, w.Name+": does not serve "+job.GetKind())
		}

		By("creating the job without managedBy on the worker that admits it")
		target := eligible[0]
		kueuesim.AdmitOn(ctx, target, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)
		var remote *unstructured.Unstructured
		Eventually(func(g Gomega) {
			remote = kueuesim.Read(ctx, g, target, job)
			g.Expect(remote).NotTo(BeNil())
		}).Should(Succeed())
		_, found, err := unstructured.NestedFieldNoCopy(remote.Object, c.managedByPath...)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse(), "managedBy at %v must not reach the worker", c.managedByPath)
		Expect(remote.GetLabels()).To(HaveKeyWithValue(courierv1alpha1.OriginLabel, courier.Config.Origin))
		Expect(remote.GetLabels()).To(HaveKeyWithValue(adapter.PrebuiltWorkloadLabel, wl.Name))
		Expect(remote.GetOwnerReferences()).To(BeEmpty())

		By("mirroring the worker's status to the manager's job")
		Eventually(func(g Gomega) {
			remote = kueuesim.Read(ctx, g, target, job)
			remote.Object["status"] = c.remoteStatus
			if c.statusInObject {
				g.Expect(target.Client.Update(ctx, remote)).To(Succeed())
			} else {
				g.Expect(target.Client.Status().Update(ctx, remote)).To(Succeed())
			}
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			local := kueuesim.Read(ctx, g, env.Manager, job)
			g.Expect(local.Object["status"]).To(Equal(c.wantStatus))
		}).Should(Succeed())

		By("deleting the worker's objects with the manager's job")
		Expect(env.Manager.Client.Delete(ctx, job)).To(Succeed())
		// The manager's garbage collector may delete the owned Workload first.
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wl))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, target, job)).To(BeNil())
			g.Expect(kueuesim.Read(ctx, g, target, wl)).To(BeNil())
		}).Should(Succeed())
	},
	Entry("batch/v1 Job", kindCase{
		make:          func(ns, name string) *unstructured.Unstructured { return batchJob(ns, name, nil) },
		managedByPath: []string{"spec", "managedBy"},
		workers:       []int{0, 1},
		remoteStatus:  map[string]any{"active": int64(1), "ready": int64(1)},
		wantStatus:    map[string]any{"active": int64(1), "ready": int64(1)},
	}),
	Entry("JobSet", kindCase{
		make: func(ns, name string) *unstructured.Unstructured {
			return object("jobset.x-k8s.io/v1alpha2", "JobSet", ns, name, map[string]any{
				"managedBy": "courier.dev/dispatcher",
				"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": int64(2),
					"template": map[string]any{"spec": map[string]any{"template": podTemplate(nil)}}}},
			})
		},
		managedByPath: []string{"spec", "managedBy"},
		workers:       []int{0, 1},
		remoteStatus:  map[string]any{"restarts": int64(1)},
		wantStatus:    map[string]any{"restarts": int64(1)},
	}),
	Entry("a CRD of our own, managedBy nested, served by one worker, only listed status fields", kindCase{
		make: func(ns, name string) *unstructured.Unstructured {
			return object("example.courier.dev/v1", "TestJob", ns, name, map[string]any{
				"runPolicy": map[string]any{"managedBy": "example.courier.dev/courier"},
				"size":      int64(3),
			})
		},
		managedByPath: []string{"spec", "runPolicy", "managedBy"},
		workers:       []int{0},
		remoteStatus: map[string]any{
			"phase":      "Running",
			"conditions": []any{map[string]any{"type": "Running", "status": "True"}},
			"internal":   "worker-only",
		},
		wantStatus: map[string]any{
			"phase":      "Running",
			"conditions": []any{map[string]any{"type": "Running", "status": "True"}},
		},
	}),
	Entry("a CRD of our own without a status subresource", kindCase{
		make: func(ns, name string) *unstructured.Unstructured {
			return object("example.courier.dev/v1", "PlainJob", ns, name, map[string]any{"managedBy": "courier.dev/dispatcher"})
		},
		managedByPath:  []string{"spec", "managedBy"},
		workers:        []int{0, 1},
		remoteStatus:   map[string]any{"phase": "Running"},
		wantStatus:     map[string]any{"phase": "Running"},
		statusInObject: true,
	}),
)

// jobEventNotes returns the notes of the events on a manager job with the
// given reason.
func jobEventNotes(ctx context.Context, g Gomega, job *unstructured.Unstructured, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Manager.Client.List(ctx, list, client.InNamespace(job.GetNamespace()))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == job.GetKind() && e.Regarding.Name == job.GetName() && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

var _ = Describe("External frameworks", func() {
	It("forwards the configured spec paths of a dispatched job, and reports a change to any other field", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		target := env.Workers[0]
		job := batchJob(ns, "fwd-job-"+rand.String(4), nil)
		Expect(unstructured.SetNestedField(job.Object, int64(1), "spec", "parallelism")).To(Succeed())
		wl := sim.Submit(ctx, job)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, target, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, target, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, target, job)).NotTo(BeNil()) }).Should(Succeed())

		By("changing spec.parallelism, which is forwarded, and spec.activeDeadlineSeconds, which is not")
		Eventually(func(g Gomega) {
			local := kueuesim.Read(ctx, g, env.Manager, job)
			g.Expect(unstructured.SetNestedField(local.Object, int64(3), "spec", "parallelism")).To(Succeed())
			g.Expect(unstructured.SetNestedField(local.Object, int64(600), "spec", "activeDeadlineSeconds")).To(Succeed())
			g.Expect(env.Manager.Client.Update(ctx, local)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			remote := kueuesim.Read(ctx, g, target, job)
			parallelism, _, _ := unstructured.NestedInt64(remote.Object, "spec", "parallelism")
			g.Expect(parallelism).To(Equal(int64(3)))
			g.Expect(jobEventNotes(ctx, g, job, courierv1alpha1.EventForwarded)).To(ContainElement(ContainSubstring("spec.parallelism")))
			g.Expect(jobEventNotes(ctx, g, job, courierv1alpha1.EventNotForwarded)).To(ContainElement(And(
				ContainSubstring("spec.activeDeadlineSeconds"), ContainSubstring("only metadata.labels, metadata.annotations, spec.parallelism"))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			remote := kueuesim.Read(ctx, g, target, job)
			_, found, _ := unstructured.NestedInt64(remote.Object, "spec", "activeDeadlineSeconds")
			g.Expect(found).To(BeFalse(), "a field not listed in forwardedSpecPaths reached the worker")
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("reports a kind missing on a worker on its WorkerCluster", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: env.Workers[1].Name}, wc)).To(Succeed())
			g.Expect(wc.Status.UnavailableKinds).To(Equal([]string{"TestJob.v1.example.courier.dev"}))
			g.Expect(meta.IsStatusConditionFalse(wc.Status.Conditions, courierv1alpha1.WorkerClusterKindsAvailable)).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(wc.Status.Conditions, courierv1alpha1.WorkerClusterActive)).To(BeTrue())
		}).Should(Succeed())
	})

	It("reports a kind the manager does not serve on the AdmissionCheck, and keeps running", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			ac := &kueue.AdmissionCheck{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: checkName}, ac)).To(Succeed())
			cond := meta.FindStatusCondition(ac.Status.Conditions, kueue.AdmissionCheckActive)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Message).To(ContainSubstring("Not dispatching Missing.v1.example.courier.dev"))
		}).Should(Succeed())
	})

	It("copies the PodGroup a Job's pods name to a worker that serves PodGroups before the Job, and deletes it with the Job", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		target := env.Workers[0]
		podGroup := object("scheduling.k8s.io/v1alpha2", "PodGroup", ns, "gang-"+rand.String(4), map[string]any{
			"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(2)}},
		})
		Expect(env.Manager.Client.Create(ctx, podGroup)).To(Succeed())
		job := batchJob(ns, "gang-job-"+rand.String(4), map[string]any{"schedulingGroup": map[string]any{"podGroupName": podGroup.GetName()}})
		Expect(unstructured.SetNestedField(job.Object, int64(2), "spec", "parallelism")).To(Succeed())
		wl := sim.Submit(ctx, job)

		By("passing over the worker without the PodGroup API, saying why")
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, env.Workers[1].Name+": does not serve PodGroup.v1alpha2.scheduling.k8s.io, which the job needs for gang scheduling")
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, target, wl)).NotTo(BeNil()) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, env.Workers[1], wl)).To(BeNil()) }).WithTimeout(2 * time.Second).Should(Succeed())
		kueuesim.AdmitOn(ctx, target, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, target.Name)
		var remoteGroup, remoteJob *unstructured.Unstructured
		Eventually(func(g Gomega) {
			remoteGroup = kueuesim.Read(ctx, g, target, podGroup)
			remoteJob = kueuesim.Read(ctx, g, target, job)
			g.Expect(remoteGroup).NotTo(BeNil())
			g.Expect(remoteJob).NotTo(BeNil())
		}).Should(Succeed())
		Expect(remoteGroup.GetLabels()).To(HaveKeyWithValue(courierv1alpha1.OriginLabel, courier.Config.Origin))
		Expect(remoteGroup.GetLabels()).To(HaveKeyWithValue(courierv1alpha1.WorkloadLabel, wl.Name))
		Expect(remoteGroup.Object["spec"]).To(Equal(podGroup.Object["spec"]))
		// One etcd orders every write: a lower revision was written first.
		Expect(revision(remoteGroup)).To(BeNumerically("<", revision(remoteJob)), "the PodGroup must exist before the Job")

		Expect(env.Manager.Client.Delete(ctx, job)).To(Succeed())
		// The manager's garbage collector may delete the owned Workload first.
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wl))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kueuesim.Read(ctx, g, target, job)).To(BeNil())
			// The worker's kube-controller-manager releases PodGroup
			// protection once no pod uses the group; the one here runs only
			// its garbage collector and namespace controller, so the
			// PodGroup stays Terminating. Courier leaves that finalizer.
			group := kueuesim.Read(ctx, g, target, podGroup)
			if group != nil {
				g.Expect(group.GetDeletionTimestamp()).NotTo(BeNil())
				g.Expect(group.GetFinalizers()).To(ConsistOf("scheduling.k8s.io/podgroup-protection"))
			}
		}).Should(Succeed())
	})

	It("collects an orphaned PodGroup copy whose manager Workload is gone", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		worker := env.Workers[0]
		orphan := object("scheduling.k8s.io/v1alpha2", "PodGroup", ns, "orphan-"+rand.String(4), map[string]any{
			"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(1)}},
		})
		orphan.SetLabels(map[string]string{courierv1alpha1.OriginLabel: courier.Config.Origin, courierv1alpha1.WorkloadLabel: "no-such-workload"})
		Expect(worker.Client.Create(ctx, orphan)).To(Succeed())
		Eventually(func(g Gomega) {
			// Deleted; PodGroup protection keeps it Terminating here (the
			// controller that releases it does not run).
			got := kueuesim.Read(ctx, g, worker, orphan)
			g.Expect(got == nil || got.GetDeletionTimestamp() != nil).To(BeTrue())
		}).Should(Succeed())
	})

	It("holds a job whose PodGroup does not exist on the manager, saying so", func(ctx context.Context) {
		ns := namespaceEverywhere(ctx)
		job := batchJob(ns, "orphan-gang-"+rand.String(4), map[string]any{"schedulingGroup": map[string]any{"podGroupName": "nowhere"}})
		wl := sim.Submit(ctx, job)
		sim.ExpectCheck(ctx, wl, kueue.CheckStatePending, "PodGroup "+ns+"/nowhere, which the job's pods name, does not exist on the manager")
		Consistently(func(g Gomega) {
			for _, w := range env.Workers {
				g.Expect(kueuesim.Read(ctx, g, w, wl)).To(BeNil())
			}
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

func revision(obj client.Object) int64 {
	rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return rv
}

func containsIndex(list []int, i int) bool {
	for _, x := range list {
		if x == i {
			return true
		}
	}
	return false
}
