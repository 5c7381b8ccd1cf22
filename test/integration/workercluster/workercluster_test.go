package workercluster

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

// connectWorker creates a kubeconfig Secret for worker and a WorkerCluster
// using it, both removed when the spec ends.
func connectWorker(ctx context.Context, worker *framework.Cluster, user string) *courierv1alpha1.WorkerCluster {
	name := worker.Name + "-" + rand.String(5)
	Expect(courier.KubeconfigSecret(ctx, env.Manager, name, worker, user)).To(Succeed())
	wc := couriertesting.MakeWorkerCluster(name).Obj()
	Expect(env.Manager.Client.Create(ctx, wc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wc))).To(Succeed())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: courier.Namespace}}
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, secret))).To(Succeed())
	})
	return wc
}

// expectActive waits until the WorkerCluster's Active condition has the
// status and reason, and returns the WorkerCluster.
func expectActive(ctx context.Context, wc *courierv1alpha1.WorkerCluster, status metav1.ConditionStatus, reason string, timeout time.Duration) *courierv1alpha1.WorkerCluster {
	got := &courierv1alpha1.WorkerCluster{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), got)).To(Succeed())
		cond := meta.FindStatusCondition(got.Status.Conditions, courierv1alpha1.WorkerClusterActive)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(status), "Active condition: %+v", cond)
		g.Expect(cond.Reason).To(Equal(reason), "Active condition: %+v", cond)
		g.Expect(cond.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(timeout).Should(Succeed())
	return got
}

func activeMessage(wc *courierv1alpha1.WorkerCluster) string {
	return meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterActive).Message
}

// expectReaches waits until the named WorkerCluster's connection reaches
// worker: a namespace made there only is visible to its direct reader, and
// its informer-backed client answers.
func expectReaches(ctx context.Context, name string, worker *framework.Cluster) {
	marker, err := worker.CreateNamespace(ctx, "marker")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	EventuallyWithOffset(1, func(g Gomega) {
		remote, err := courier.Cache.Get(name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.APIReader.Get(ctx, client.ObjectKeyFromObject(marker), &corev1.Namespace{})).To(Succeed())
		g.Expect(remote.Client.List(ctx, &kueue.WorkloadList{}, client.InNamespace(marker.Name))).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

var _ = Describe("WorkerCluster connections", func() {
	It("connects to both workers and reads their objects from origin-filtered informers", func(ctx context.Context) {
		for _, worker := range env.Workers {
			wc := connectWorker(ctx, worker, framework.AdminUser)
			got := expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
			Expect(got.Status.ConnectedSince).NotTo(BeNil())
			Expect(got.Status.DisconnectedSince).To(BeNil())
			Expect(got.Status.KubernetesVersion).To(HavePrefix("v1.36."))
			Expect(got.Status.UnavailableKinds).To(BeEmpty())
			Expect(meta.IsStatusConditionTrue(got.Status.Conditions, courierv1alpha1.WorkerClusterKindsAvailable)).To(BeTrue())

			expectReaches(ctx, wc.Name, worker)

			By("not seeing objects without the origin label")
			ns, err := worker.CreateNamespace(ctx, "foreign")
			Expect(err).NotTo(HaveOccurred())
			foreign := kueuetesting.MakeWorkload("foreign", ns.Name).Obj()
			Expect(worker.Client.Create(ctx, foreign)).To(Succeed())
			remote, err := courier.Cache.Get(wc.Name)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				g.Expect(remote.APIReader.Get(ctx, client.ObjectKeyFromObject(foreign), &kueue.Workload{})).To(Succeed())
			}).Should(Succeed())
			Consistently(func(g Gomega) {
				list := &kueue.WorkloadList{}
				g.Expect(remote.Client.List(ctx, list, client.InNamespace(ns.Name))).To(Succeed())
				g.Expect(list.Items).To(BeEmpty())
			}).WithTimeout(2 * time.Second).Should(Succeed())
		}
	})

	It("exports connection state and remote request metrics per cluster", func(ctx context.Context) {
		wc := connectWorker(ctx, env.Workers[0], framework.AdminUser)
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Eventually(func(g Gomega) {
			families, err := ctrlmetrics.Registry.Gather()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(metricValue(families, "courier_worker_cluster_connected", wc.Name)).To(Equal(1.0))
			g.Expect(metricValue(families, "courier_remote_request_duration_seconds", wc.Name)).To(BeNumerically(">", 0), "requests observed")
		}).Should(Succeed())
	})

	It("reports a missing Secret, then connects once the Secret is created", func(ctx context.Context) {
		name := "late-" + rand.String(5)
		wc := couriertesting.MakeWorkerCluster(name).Obj()
		Expect(env.Manager.Client.Create(ctx, wc)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Manager.Client.Delete(ctx, wc)).To(Succeed()) })

		got := expectActive(ctx, wc, metav1.ConditionFalse, courierv1alpha1.ReasonSecretNotFound, 30*time.Second)
		Expect(activeMessage(got)).To(ContainSubstring(courier.Namespace + "/" + name + " does not exist"))
		Expect(got.Status.DisconnectedSince).To(BeNil(), "a configuration error is not a disconnection")

		Expect(courier.KubeconfigSecret(ctx, env.Manager, name, env.Workers[0], framework.AdminUser)).To(Succeed())
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, 30*time.Second)
	})

	It("refuses a kubeconfig that skips TLS verification", func(ctx context.Context) {
		wc := connectWorker(ctx, env.Workers[0], framework.AdminUser)
		secret := &corev1.Secret{}
		Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: wc.Name}, secret)).To(Succeed())
		secret.Data["kubeconfig"] = insecure(secret.Data["kubeconfig"])
		Expect(env.Manager.Client.Update(ctx, secret)).To(Succeed())

		got := expectActive(ctx, wc, metav1.ConditionFalse, courierv1alpha1.ReasonInsecureKubeconfig, 30*time.Second)
		Expect(activeMessage(got)).To(ContainSubstring("insecure-skip-tls-verify"))
		_, err := courier.Cache.Get(wc.Name)
		Expect(err).To(MatchError(cluster.ErrNotConnected))
	})

	It("reports credentials without RBAC permissions as Forbidden", func(ctx context.Context) {
		wc := connectWorker(ctx, env.Workers[0], framework.RestrictedUser)
		got := expectActive(ctx, wc, metav1.ConditionFalse, courierv1alpha1.ReasonForbidden, 30*time.Second)
		Expect(activeMessage(got)).To(ContainSubstring("RBAC"))
		Expect(got.Status.DisconnectedSince).To(BeNil(), "a configuration error is not a disconnection")
	})

	It("follows a Secret rotated to the other worker's kubeconfig", func(ctx context.Context) {
		wc := connectWorker(ctx, env.Workers[0], framework.AdminUser)
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)

		secret := &corev1.Secret{}
		Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: wc.Name}, secret)).To(Succeed())
		secret.Data["kubeconfig"], _ = env.Workers[1].Kubeconfig(framework.AdminUser)
		Expect(env.Manager.Client.Update(ctx, secret)).To(Succeed())

		expectReaches(ctx, wc.Name, env.Workers[1])
		expectActive(ctx, wc, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
	})

	It("disables TrainJobs only on the worker without the Trainer CRD", func(ctx context.Context) {
		second := env.Workers[1]
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(second.Client.Get(ctx, client.ObjectKey{Name: "trainjobs.trainer.kubeflow.org"}, crd)).To(Succeed())
		Expect(second.Client.Delete(ctx, crd)).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := second.Discovery().ServerResourcesForGroupVersion(trainer.GroupVersion.String())
			if err == nil {
				list, _ := second.Discovery().ServerResourcesForGroupVersion(trainer.GroupVersion.String())
				for _, r := range list.APIResources {
					g.Expect(r.Kind).NotTo(Equal(trainer.TrainJobKind))
				}
			}
			// A CRD goes once its objects are cleaned up, which may take
			// seconds on a loaded machine.
		}).WithTimeout(time.Minute).Should(Succeed())

		withCRD := connectWorker(ctx, env.Workers[0], framework.AdminUser)
		withoutCRD := connectWorker(ctx, second, framework.AdminUser)
		trainJob := "TrainJob.v1alpha1.trainer.kubeflow.org"

		got := expectActive(ctx, withoutCRD, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Expect(got.Status.UnavailableKinds).To(Equal([]string{trainJob}))
		kinds := meta.FindStatusCondition(got.Status.Conditions, courierv1alpha1.WorkerClusterKindsAvailable)
		Expect(kinds).NotTo(BeNil())
		Expect(kinds.Status).To(Equal(metav1.ConditionFalse))
		Expect(kinds.Reason).To(Equal(courierv1alpha1.ReasonKindsMissing))
		Expect(kinds.Message).To(ContainSubstring(trainJob))
		remote, err := courier.Cache.Get(withoutCRD.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(remote.Serves(trainer.GroupVersion.WithKind(trainer.TrainJobKind))).To(BeFalse())
		Expect(remote.Serves(kueue.SchemeGroupVersion.WithKind("Workload"))).To(BeTrue())
		expectReaches(ctx, withoutCRD.Name, second)

		got = expectActive(ctx, withCRD, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Expect(got.Status.UnavailableKinds).To(BeEmpty())
		remote, err = courier.Cache.Get(withCRD.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(remote.Serves(trainer.GroupVersion.WithKind(trainer.TrainJobKind))).To(BeTrue())

		By("enabling TrainJobs again once the CRD is back")
		crd.ObjectMeta = metav1.ObjectMeta{Name: crd.Name}
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		Expect(second.InstallCRDs(ctx, []*apiextensionsv1.CustomResourceDefinition{crd})).To(Succeed())
		Eventually(func(g Gomega) {
			got := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(withoutCRD), got)).To(Succeed())
			g.Expect(got.Status.UnavailableKinds).To(BeEmpty())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, courierv1alpha1.WorkerClusterKindsAvailable)).To(BeTrue())
		}).WithTimeout(cluster.DefaultKindsPeriod + 30*time.Second).Should(Succeed())
	})
})

var _ = Describe("Losing a worker", Ordered, func() {
	var lost, kept *courierv1alpha1.WorkerCluster

	BeforeAll(func(ctx context.Context) {
		lost = connectWorker(ctx, env.Workers[1], framework.AdminUser)
		kept = connectWorker(ctx, env.Workers[0], framework.AdminUser)
		expectActive(ctx, lost, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		expectActive(ctx, kept, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
	})

	It("turns a worker whose API server stopped Unreachable within 30s, while the other stays Active and serving", func(ctx context.Context) {
		Expect(env.Workers[1].StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			if !env.Workers[1].APIServerRunning() {
				Expect(env.Workers[1].StartAPIServer(ctx)).To(Succeed())
			}
		})

		got := expectActive(ctx, lost, metav1.ConditionFalse, courierv1alpha1.ReasonUnreachable, 30*time.Second)
		Expect(got.Status.DisconnectedSince).NotTo(BeNil())
		Expect(got.Status.ConnectedSince).To(BeNil())
		first := got.Status.DisconnectedSince.DeepCopy()

		expectActive(ctx, kept, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Second)
		expectReaches(ctx, kept.Name, env.Workers[0])

		By("keeping disconnectedSince through retries")
		Consistently(func(g Gomega) {
			got := &courierv1alpha1.WorkerCluster{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(lost), got)).To(Succeed())
			g.Expect(got.Status.DisconnectedSince).To(HaveValue(Equal(*first)))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("reconnects when the API server is back, without restarting Courier", func(ctx context.Context) {
		got := expectActive(ctx, lost, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
		Expect(got.Status.DisconnectedSince).To(BeNil())
		expectReaches(ctx, lost.Name, env.Workers[1])
	})

	It("isolates a hung worker: it turns Unreachable while the other keeps reconciling and serving", func(ctx context.Context) {
		Expect(env.Workers[1].PauseAPIServer()).To(Succeed())
		DeferCleanup(func() { Expect(env.Workers[1].ResumeAPIServer()).To(Succeed()) })

		expectActive(ctx, lost, metav1.ConditionFalse, courierv1alpha1.ReasonUnreachable, 30*time.Second)

		By("connecting a new WorkerCluster to the healthy worker meanwhile")
		fresh := connectWorker(ctx, env.Workers[0], framework.AdminUser)
		expectActive(ctx, fresh, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, 30*time.Second)
		expectReaches(ctx, kept.Name, env.Workers[0])

		Expect(env.Workers[1].ResumeAPIServer()).To(Succeed())
		expectActive(ctx, lost, metav1.ConditionTrue, courierv1alpha1.ReasonConnected, time.Minute)
	})
})

// insecure rewrites a kubeconfig to skip TLS verification.
func insecure(data []byte) []byte {
	cfg, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.InsecureSkipTLSVerify = true
		c.CertificateAuthorityData = nil
	}
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// metricValue returns a gauge's value, or a histogram's sample count, summed
// over the series labelled with cluster.
func metricValue(families []*dto.MetricFamily, name, cluster string) float64 {
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					sum += m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return sum
}
