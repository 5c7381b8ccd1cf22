package plugin

import (
	"context"
	"encoding/json"
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
	"github.com/courierdev/courier/pkg/cli"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/integration/kueuesim"
)

func trainJobIn(ns string) *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob("tj-"+rand.String(5), ns).ManagedBy(adapter.TrainJobManagedBy).Queue("lq")
}

// fullQueue gives namespace ns on worker a LocalQueue "lq" in a
// ClusterQueue of one CPU that admitted workloads use up, as the worker's
// Kueue reports it, and waits until the WorkerCluster shows it.
func fullQueue(ctx context.Context, worker *framework.Cluster, ns string) {
	GinkgoHelper()
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := worker.Client.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	cq := kueuetesting.MakeClusterQueue(ns).Quota("default", corev1.ResourceCPU, "1").Obj()
	Expect(worker.Client.Create(ctx, cq)).To(Succeed())
	Expect(worker.Client.Create(ctx, kueuetesting.MakeLocalQueue("lq", ns, cq.Name).Obj())).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(worker.Client.Get(ctx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
		cq.Status = kueuetesting.MakeClusterQueue(ns).Reserved("default", corev1.ResourceCPU, "1").Status
		g.Expect(worker.Client.Status().Update(ctx, cq)).To(Succeed())
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		wc := &courierv1alpha1.WorkerCluster{}
		g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: worker.Name}, wc)).To(Succeed())
		g.Expect(wc.Status.CapacitySummary).To(HavePrefix("cpu 1/1"))
	}).WithTimeout(time.Minute).Should(Succeed())
}

var _ = Describe("kubectl courier", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		var err error
		ns, err = env.NamespaceEverywhere(ctx, "plugin")
		Expect(err).NotTo(HaveOccurred())
	})

	It("shows where a dispatched job runs, its check, its worker, the status mirrored from there, the events, and the worker's jobs", func(ctx context.Context) {
		tj := trainJobIn(ns).Obj()
		wl := sim.Submit(ctx, tj)
		worker := env.Workers[0]
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, worker, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, worker, wl)
		sim.ExpectCheck(ctx, wl, kueue.CheckStateReady, worker.Name)
		By("having Trainer on the worker resume the job, which Courier mirrors to the manager")
		Eventually(func(g Gomega) {
			remote := &trainer.TrainJob{}
			g.Expect(worker.Client.Get(ctx, client.ObjectKeyFromObject(tj), remote)).To(Succeed())
			meta.SetStatusCondition(&remote.Status.Conditions, metav1.Condition{Type: trainer.TrainJobSuspended, Status: metav1.ConditionFalse, Reason: "Resumed", Message: "TrainJob is resumed"})
			g.Expect(worker.Client.Status().Update(ctx, remote)).To(Succeed())
		}).Should(Succeed())

		By("reading status as JSON, as a user who may not read Secrets")
		var status cli.StatusReport
		Eventually(func(g Gomega) {
			out, err := kubectlCourier(ctx, "status", "trainjob/"+tj.Name, "-n", ns, "-o", "json")
			g.Expect(err).NotTo(HaveOccurred())
			status = cli.StatusReport{}
			g.Expect(json.Unmarshal([]byte(out), &status)).To(Succeed(), out)
			g.Expect(status.Events).To(ContainElement(And(HaveField("Object", "Workload/"+wl.Name), HaveField("Reason", courierv1alpha1.EventDispatched))))
			g.Expect(status.JobState).To(Equal("not " + trainer.TrainJobSuspended))
		}).Should(Succeed())
		Expect(status.Job).To(Equal(cli.JobRef{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: ns, Name: tj.Name}))
		Expect(status.Workload).To(Equal(wl.Name))
		Expect(status.Cluster).To(Equal(worker.Name))
		Expect(status.Live).To(BeTrue())
		Expect(status.Check).NotTo(BeNil())
		Expect(*status.Check).To(And(HaveField("Name", checkName), HaveField("Policy", policyName), HaveField("State", "Ready"),
			HaveField("Message", ContainSubstring(worker.Name))))
		Expect(status.Worker).To(Equal(&cli.WorkerStatus{Cluster: worker.Name, Found: true, Active: "True", Reason: courierv1alpha1.ReasonConnected,
			Message: status.Worker.Message}))
		Expect(status.JobMessage).To(Equal("Resumed: TrainJob is resumed"))
		Expect(status.Notes).To(BeEmpty())

		By("reading status as a table, the kind left to its default")
		out, err := kubectlCourier(ctx, "status", tj.Name, "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`WHERE:\s+Placed on ` + worker.Name + `\.`))
		Expect(out).To(MatchRegexp(`CHECK:\s+` + checkName + `\s+Ready - Dispatched to worker "` + worker.Name + `"`))
		Expect(out).To(MatchRegexp(`WORKER:\s+` + worker.Name + `\s+Active \(Connected\)`))
		Expect(out).To(MatchRegexp(`JOB STATUS:\s+not Suspended - Resumed: TrainJob is resumed`))
		Expect(out).To(MatchRegexp(`(?m)^Workload/` + wl.Name + `\s+Normal\s+Dispatched\s+`))

		By("listing it among the jobs of every namespace, by name and through a jsonpath")
		out, err = kubectlCourier(ctx, "status", "-A", "--no-headers")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^` + ns + `\s+trainjob/` + tj.Name + `\s+` + wl.Name + `\s+\S+\s+Ready\s+` + worker.Name + `\s+\S+$`))
		Expect(out).NotTo(ContainSubstring("NAMESPACE"))
		out, err = kubectlCourier(ctx, "status", "-n", ns, "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("trainjob.trainer.kubeflow.org/" + tj.Name + "\n"))
		out, err = kubectlCourier(ctx, "status", tj.Name, "-n", ns, "-o", "jsonpath={.cluster}")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(worker.Name))

		By("counting the job on its worker")
		out, err = kubectlCourier(ctx, "clusters", "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var clusters cli.ClustersReport
		Expect(json.Unmarshal([]byte(out), &clusters)).To(Succeed(), out)
		Expect(clusters.Clusters).To(HaveLen(len(env.Workers)))
		Expect(clusters.Clusters).To(ContainElement(And(HaveField("Name", worker.Name), HaveField("Active", "True"),
			HaveField("Reason", courierv1alpha1.ReasonConnected), HaveField("Jobs.Placed", BeNumerically(">=", 1)))))
		out, err = kubectlCourier(ctx, "clusters")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^NAME\s+ACTIVE\s+REASON\s+DRAINING\s+PLACED\s+WAITING\s+CAPACITY$`))
		Expect(out).To(MatchRegexp(`(?m)^` + worker.Name + `\s+True\s+Connected\s+no\s+[1-9]\d*\s+\d+\s+`))
		out, err = kubectlCourier(ctx, "clusters", "-o", "wide")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^NAME\s+ACTIVE\s+REASON\s+DRAINING\s+PLACED\s+WAITING\s+CAPACITY\s+KUBERNETES\s+UNAVAILABLE\s+MESSAGE$`))
		out, err = kubectlCourier(ctx, "clusters", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("workercluster.courier.dev/" + worker.Name + "\n"))
	})

	It("says which job it cannot find, and how to name one", func(ctx context.Context) {
		_, err := kubectlCourier(ctx, "status", "missing", "-n", ns)
		Expect(err).To(MatchError("TrainJob missing not found in namespace " + ns + "; pick the namespace with -n"))
		_, err = kubectlCourier(ctx, "explain", "job.batch/missing", "-n", ns)
		Expect(err).To(MatchError("Job missing not found in namespace " + ns + "; pick the namespace with -n"))
		_, err = kubectlCourier(ctx, "status", "nosuchkind/x", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring(`the manager serves no resource "nosuchkind"; name the job as TYPE/NAME`)))
		_, err = kubectlCourier(ctx, "clusters", "-o", "table")
		Expect(err).To(MatchError(HavePrefix(`--output "table" is not a format kubectl courier prints; use one of wide, json, yaml`)))
		_, err = kubectlCourier(ctx, "explain", "missing", "-A")
		Expect(err).To(MatchError("a job is named in one namespace: pick it with -n; -A lists every job, with kubectl courier status -A"))
	})

	It("explains a job that waits because no worker has room for it", func(ctx context.Context) {
		var names []string
		for _, w := range env.Workers {
			fullQueue(ctx, w, ns)
			names = append(names, w.Name)
		}
		check := "bestfit-" + rand.String(5)
		Expect(courier.CreateCheck(ctx, env, check, check, courierv1alpha1.BestFit, names)).To(Succeed())
		bestFit := &kueuesim.Sim{Env: env, Check: kueue.AdmissionCheckReference(check)}
		tj := trainJobIn(ns).Obj()
		wl := bestFit.Submit(ctx, tj)
		bestFit.ExpectCheck(ctx, wl, kueue.CheckStatePending, "Nominated ")

		By("explaining it as JSON")
		out, err := kubectlCourier(ctx, "explain", "trainjob/"+tj.Name, "-n", ns, "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var explain cli.ExplainReport
		Expect(json.Unmarshal([]byte(out), &explain)).To(Succeed(), out)
		Expect(explain.Why).To(HavePrefix("No worker has room for the job now; it waits until one does"))
		Expect(explain.Check).NotTo(BeNil())
		Expect(explain.Check.State).To(Equal("Pending"))
		Expect(explain.Policy).To(Equal(&cli.PolicySummary{Name: check, Strategy: "BestFit", Clusters: names}))
		noRoom := func(name string) any {
			return And(HaveField("Name", name), HaveField("Eligible", true), HaveField("RoomNow", false),
				HaveField("Reason", "no room now: cpu: needs 1, has free 0"))
		}
		Expect(explain.Workers).To(ConsistOf(noRoom(names[0]), noRoom(names[1])))
		Expect(explain.Workers).To(ContainElement(HaveField("Nominated", true)), "BestFit nominates one worker even without room")

		By("explaining it as a table")
		out, err = kubectlCourier(ctx, "explain", tj.Name, "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`WHY:\s+No worker has room for the job now`))
		Expect(out).To(MatchRegexp(`POLICY:\s+` + check + `\s+strategy BestFit\s+clusters ` + names[0] + "," + names[1]))
		for _, name := range names {
			Expect(out).To(MatchRegexp(`(?m)^` + name + `\s+yes\s+no\s+(yes|no)\s+no room now: cpu: needs 1, has free 0$`))
		}

		By("showing it waiting in status")
		out, err = kubectlCourier(ctx, "status", tj.Name, "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("WHERE:     Waiting for a worker's Kueue to admit it; copies on "))
		Expect(out).NotTo(ContainSubstring("WORKER:"))
	})
})
