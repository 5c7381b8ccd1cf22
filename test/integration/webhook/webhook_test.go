package webhook

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/runtimepatch"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// The ClusterQueues the specs queue jobs to: one behind a Courier check,
// one behind another controller's check.
const (
	courierQueue = "through-courier"
	plainQueue   = "elsewhere"
)

// createQueues creates the ClusterQueues and AdmissionChecks, and waits for
// Courier's webhook server to answer.
func createQueues(ctx context.Context) {
	c := env.Manager.Client
	for _, ac := range []*kueue.AdmissionCheck{
		{ObjectMeta: metav1.ObjectMeta{Name: "courier"}, Spec: kueue.AdmissionCheckSpec{ControllerName: courierv1alpha1.ControllerName}},
		{ObjectMeta: metav1.ObjectMeta{Name: "approval"}, Spec: kueue.AdmissionCheckSpec{ControllerName: "example.com/approval"}},
	} {
		Expect(c.Create(ctx, ac)).To(Succeed())
	}
	Expect(c.Create(ctx, kueuetesting.MakeClusterQueue(courierQueue).Check("approval").Check("courier").Obj())).To(Succeed())
	Expect(c.Create(ctx, kueuetesting.MakeClusterQueue(plainQueue).Check("approval").Obj())).To(Succeed())

	By("waiting for Courier's webhook server to answer")
	Eventually(func(g Gomega) {
		policy := &courierv1alpha1.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: courierv1alpha1.DispatchPolicySpec{Clusters: []string{"w1"}, Filter: "1"}}
		err := c.Create(ctx, policy, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating a policy with a filter that is not a bool: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.filter"))
	}).Should(Succeed())
}

var _ = Describe("The managedBy webhook", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		n, err := env.Manager.CreateNamespace(ctx, "defaulting")
		Expect(err).NotTo(HaveOccurred())
		ns = n.Name
	})

	// queue creates a LocalQueue just before the job that names it, as a
	// script would: the webhook must not miss it for a stale cache.
	queue := func(ctx context.Context, name, cq string) {
		Expect(env.Manager.Client.Create(ctx, kueuetesting.MakeLocalQueue(name, ns, cq).Obj())).To(Succeed())
	}

	It("defaults managedBy on a TrainJob queued through a Courier check", func(ctx context.Context) {
		queue(ctx, "team", courierQueue)
		job := trainertesting.MakeTrainJob("train", ns).Queue("team").Obj()
		Expect(env.Manager.Client.Create(ctx, job)).To(Succeed())
		Expect(job.Spec.ManagedBy).To(HaveValue(Equal(adapter.TrainJobManagedBy)))
	})

	It("defaults managedBy on a job of an external framework", func(ctx context.Context) {
		queue(ctx, "team", courierQueue)
		job := batchJob(ns, "batch", "team")
		Expect(env.Manager.Client.Create(ctx, job)).To(Succeed())
		Expect(job.Spec.ManagedBy).To(HaveValue(Equal("courier.dev/dispatcher")))
	})

	It("leaves alone a managedBy the user set to another controller", func(ctx context.Context) {
		queue(ctx, "team", courierQueue)
		job := batchJob(ns, "other", "team")
		job.Spec.ManagedBy = ptr.To("example.com/other-dispatcher")
		Expect(env.Manager.Client.Create(ctx, job)).To(Succeed())
		Expect(job.Spec.ManagedBy).To(HaveValue(Equal("example.com/other-dispatcher")))
	})

	It("replaces a managedBy naming the kind's own controller, which the TrainJob CRD sets by default", func(ctx context.Context) {
		queue(ctx, "team", courierQueue)
		job := batchJob(ns, "own", "team")
		job.Spec.ManagedBy = ptr.To("kubernetes.io/job-controller")
		Expect(env.Manager.Client.Create(ctx, job)).To(Succeed())
		Expect(job.Spec.ManagedBy).To(HaveValue(Equal("courier.dev/dispatcher")))
	})

	It("leaves alone jobs whose ClusterQueue has no Courier check, or whose LocalQueue does not exist", func(ctx context.Context) {
		queue(ctx, "local", plainQueue)
		local := trainertesting.MakeTrainJob("local", ns).Queue("local").Obj()
		Expect(env.Manager.Client.Create(ctx, local)).To(Succeed())
		Expect(local.Spec.ManagedBy).To(HaveValue(Equal("trainer.kubeflow.org/trainjob-controller")))

		missing := batchJob(ns, "missing", "no-such-queue")
		Expect(env.Manager.Client.Create(ctx, missing)).To(Succeed())
		Expect(missing.Spec.ManagedBy).To(BeNil())

		unqueued := batchJob(ns, "unqueued", "")
		delete(unqueued.Labels, "kueue.x-k8s.io/queue-name")
		Expect(env.Manager.Client.Create(ctx, unqueued)).To(Succeed())
		Expect(unqueued.Spec.ManagedBy).To(BeNil())
	})
})

var _ = Describe("The TrainJob webhook", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		n, err := env.Manager.CreateNamespace(ctx, "validation")
		Expect(err).NotTo(HaveOccurred())
		ns = n.Name
		Expect(env.Manager.Client.Create(ctx, kueuetesting.MakeLocalQueue("team", ns, courierQueue).Obj())).To(Succeed())
	})

	It("refuses RuntimePatches that Trainer forbids, naming the field", func(ctx context.Context) {
		job := trainertesting.MakeTrainJob("env", ns).Queue("team").NodeEnv("example.com/tool", "A", "b").Obj()
		err := env.Manager.Client.Create(ctx, job)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating a TrainJob with env on the node container: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env"))
		Expect(err.Error()).To(ContainSubstring(`Trainer forbids env on the "node" container`))

		job = trainertesting.MakeTrainJob("manager", ns).Queue("team").RuntimePatch("tool", "team", "a").Obj()
		err = env.Manager.Client.Create(ctx, job)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating a TrainJob with a manager that is not a domain-prefixed path: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.runtimePatches[0].manager"))
	})

	It("refuses a change of an entry's manager", func(ctx context.Context) {
		job := trainertesting.MakeTrainJob("rename", ns).Queue("team").Suspend(true).RuntimePatch("example.com/a", "team", "a").Obj()
		Expect(env.Manager.Client.Create(ctx, job)).To(Succeed())
		job.Spec.RuntimePatches[0].Manager = "example.com/b"
		err := env.Manager.Client.Update(ctx, job)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "renaming an entry's manager: %v", err)
		Expect(err.Error()).To(ContainSubstring(`spec.runtimePatches[0].manager: Forbidden: an entry's manager is immutable (was "example.com/a")`))
	})

	It("lets RuntimePatches change while the TrainJob is suspended before or after the update, and refuses it otherwise", func(ctx context.Context) {
		c := env.Manager.Client
		job := trainertesting.MakeTrainJob("patches", ns).Queue("team").Suspend(true).RuntimePatch("example.com/a", "team", "a").Obj()
		Expect(c.Create(ctx, job)).To(Succeed())

		By("changing them while suspended")
		job.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Metadata.Labels["team"] = "b"
		Expect(c.Update(ctx, job)).To(Succeed())

		By("changing them in the update that resumes the job")
		job.Spec.Suspend = ptr.To(false)
		job.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Metadata.Labels["team"] = "c"
		Expect(c.Update(ctx, job)).To(Succeed())

		By("changing them while it runs")
		job.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Metadata.Labels["team"] = "d"
		err := c.Update(ctx, job)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "changing RuntimePatches of a running TrainJob: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.runtimePatches: Forbidden: RuntimePatches can change only while the TrainJob is suspended before or after the update"))

		By("changing anything else while it runs")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		job.Labels["stage"] = "2"
		Expect(c.Update(ctx, job)).To(Succeed())
	})

	It("asks nothing of Kueue's own updates, nor of an update that leaves the others' RuntimePatches as they were", func(ctx context.Context) {
		c := env.Manager.Client
		By("Kueue adding its entry to a running TrainJob")
		job := trainertesting.MakeTrainJob("running", ns).Queue("team").Suspend(false).RuntimePatch("example.com/a", "team", "a").Obj()
		Expect(c.Create(ctx, job)).To(Succeed())
		kueues := trainertesting.MakeTrainJob("", "").RuntimePatch(runtimepatch.KueueManager, "kueue.x-k8s.io/podset", "node").Obj().Spec.RuntimePatches
		job.Spec.RuntimePatches = append(job.Spec.RuntimePatches, kueues...)
		Expect(c.Update(ctx, job)).To(Succeed())

		By("queueing a TrainJob whose RuntimePatches were written while no webhook saw it")
		unqueued := trainertesting.MakeTrainJob("unqueued", ns).ManagedBy(adapter.TrainJobManagedBy).NodeEnv("example.com/tool", "A", "b").Obj()
		Expect(c.Create(ctx, unqueued)).To(Succeed())
		unqueued.Labels = map[string]string{"kueue.x-k8s.io/queue-name": "team"}
		Expect(c.Update(ctx, unqueued)).To(Succeed())

		By("changing them then")
		unqueued.Spec.Suspend = ptr.To(true)
		unqueued.Spec.RuntimePatches = append(unqueued.Spec.RuntimePatches, kueues...)
		unqueued.Spec.RuntimePatches[1].Manager = "example.com/b"
		err := c.Update(ctx, unqueued)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "adding an entry to RuntimePatches that break Trainer's rules: %v", err)
		Expect(err.Error()).To(ContainSubstring(`Trainer forbids env on the "node" container`))
	})

	It("leaves alone TrainJobs that Courier does not dispatch", func(ctx context.Context) {
		job := trainertesting.MakeTrainJob("theirs", ns).ManagedBy("trainer.kubeflow.org/trainjob-controller").NodeEnv("example.com/tool", "A", "b").Obj()
		Expect(env.Manager.Client.Create(ctx, job)).To(Succeed())
	})
})

var _ = Describe("The DispatchPolicy webhook", func() {
	It("refuses CEL that does not compile, naming the field, and accepts CEL that does", func(ctx context.Context) {
		c := env.Manager.Client
		bad := &courierv1alpha1.DispatchPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"},
			Spec:       courierv1alpha1.DispatchPolicySpec{Clusters: []string{"w1"}, Filter: "cluster.name ==", Score: `"high"`},
		}
		err := c.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating a policy with broken CEL: %v", err)
		Expect(err.Error()).To(And(ContainSubstring("spec.filter: Invalid value"), ContainSubstring("spec.score: Invalid value"),
			ContainSubstring("gives string, want int, uint or double")))

		good := &courierv1alpha1.DispatchPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "good-"},
			Spec:       courierv1alpha1.DispatchPolicySpec{Clusters: []string{"w1"}, Filter: `cluster.name != "w3"`, Score: "1.0"},
		}
		Expect(c.Create(ctx, good)).To(Succeed())
		// A patch, not an update: Courier writes the policy's status
		// meanwhile, and an update would conflict with that instead.
		before := good.DeepCopy()
		good.Spec.Filter = "nodes > 1"
		err = c.Patch(ctx, good, client.MergeFrom(before))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "updating a policy's filter to broken CEL: %v", err)
		Expect(err.Error()).To(ContainSubstring("undeclared reference to 'nodes'"))

		By("refusing a misspelt field, naming it")
		misspelt := &courierv1alpha1.DispatchPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "misspelt-"},
			Spec:       courierv1alpha1.DispatchPolicySpec{Clusters: []string{"w1"}, Filter: `cluster.lables["gpu"] == "a100"`},
		}
		err = c.Create(ctx, misspelt)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating a policy whose filter misspells a field: %v", err)
		Expect(err.Error()).To(ContainSubstring(`cluster has no field "lables"; it has capacity, labels, name`))

		By("refusing a misspelt field of what cluster and workload hold")
		nested := &courierv1alpha1.DispatchPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "misspelt-"},
			Spec:       courierv1alpha1.DispatchPolicySpec{Clusters: []string{"w1"}, Score: `cluster.capacity["cpu"].fre`},
		}
		err = c.Create(ctx, nested)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating a policy whose score misspells a capacity field: %v", err)
		Expect(err.Error()).To(ContainSubstring("undefined field 'fre'"))
	})
})

func batchJob(ns, name, queue string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"kueue.x-k8s.io/queue-name": queue}},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
}
