package migrate

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

var _ = Describe("kubectl courier migrate", func() {
	It("converts the manager's MultiKueue set-up, applies nothing over an object that says otherwise, applies, and Courier dispatches through what it applied", func(ctx context.Context) {
		c := env.Manager.Client
		kueueNS, err := env.Manager.CreateNamespace(ctx, "kueue")
		Expect(err).NotTo(HaveOccurred())
		ns, err := env.NamespaceEverywhere(ctx, "migrate")
		Expect(err).NotTo(HaveOccurred())
		worker := env.Workers[0]
		suffix := rand.String(5)
		clusterName, secretName, configName, mkCheck, cqName := "mk-"+suffix, "mk-kubeconfig-"+suffix, "gpus-"+suffix, "multikueue-"+suffix, "gpu-"+suffix
		courierCheck := mkCheck + "-courier"

		By("setting up MultiKueue as Kueue's documentation has it: a kubeconfig Secret in Kueue's namespace, a cluster, a config, a check and a ClusterQueue running it")
		kubeconfigData, err := worker.Kubeconfig(framework.CourierUser)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueNS.Name, Name: secretName},
			Data: map[string][]byte{"kubeconfig": kubeconfigData}})).To(Succeed())
		Expect(c.Create(ctx, &kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName},
			Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{Location: secretName, LocationType: kueue.SecretLocationType}}}})).To(Succeed())
		Expect(c.Create(ctx, &kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: configName}, Spec: kueue.MultiKueueConfigSpec{Clusters: []string{clusterName}}})).To(Succeed())
		Expect(c.Create(ctx, &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: mkCheck}, Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName,
			Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: kueue.SchemeGroupVersion.Group, Kind: "MultiKueueConfig", Name: configName}}})).To(Succeed())
		Expect(c.Create(ctx, kueuetesting.MakeClusterQueue(cqName).Check(mkCheck).Obj())).To(Succeed())
		mkSim := &kueuesim.Sim{Env: env, Check: kueue.AdmissionCheckReference(mkCheck)}
		running := mkSim.SubmitTo(ctx, trainJobIn(ns).Obj(), cqName)
		args := []string{"migrate", "--kueue-namespace", kueueNS.Name, "--courier-namespace", courier.Namespace}

		By("printing, by default, what it would apply, and applying nothing")
		out, err := kubectlCourier(ctx, admin, append(args, "-o", "json")...)
		Expect(err).NotTo(HaveOccurred())
		var report cli.MigrateReport
		Expect(json.Unmarshal([]byte(out), &report)).To(Succeed(), out)
		Expect(report.WorkerClusters).To(HaveExactElements(And(HaveField("Name", clusterName),
			HaveField("Spec.Kubeconfig", Equal(&courierv1alpha1.KubeconfigSource{SecretRef: courierv1alpha1.SecretKeyReference{Name: secretName, Key: "kubeconfig"}})))))
		Expect(report.DispatchPolicies).To(HaveExactElements(And(HaveField("Name", configName), HaveField("Spec.Clusters", []string{clusterName}),
			HaveField("Spec.Strategy", courierv1alpha1.AllAtOnce))))
		Expect(report.AdmissionChecks).To(HaveExactElements(And(HaveField("Name", courierCheck), HaveField("Spec.ControllerName", courierv1alpha1.ControllerName))))
		Expect(report.Secrets).To(Equal([]cli.SecretCopy{{Name: secretName, FromNamespace: kueueNS.Name, ToNamespace: courier.Namespace, UsedBy: []string{clusterName}}}))
		Expect(report.ClusterQueues).To(HaveExactElements(And(HaveField("Name", cqName), HaveField("Replace", map[string]string{mkCheck: courierCheck}),
			HaveField("InFlight", 1))))
		Expect(report.Applied).To(BeEmpty())
		out, err = kubectlCourier(ctx, admin, args...)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("#   " + cqName + " (" + mkCheck + " -> " + courierCheck + "): 1 workloads in flight with MultiKueue"))
		Expect(out).To(ContainSubstring("---\napiVersion: courier.dev/v1alpha1\nkind: WorkerCluster\n"))
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: clusterName}, &courierv1alpha1.WorkerCluster{}))).To(BeTrue(), "a dry run created WorkerCluster %s", clusterName)

		By("telling a user who may not read MultiKueue's objects what to run it as")
		_, err = kubectlCourier(ctx, restricted, args...)
		Expect(err).To(MatchError(ContainSubstring("run kubectl courier migrate as a user who may")))

		By("applying nothing while a DispatchPolicy of the config's name says something else")
		standing := &courierv1alpha1.DispatchPolicy{ObjectMeta: metav1.ObjectMeta{Name: configName},
			Spec: courierv1alpha1.DispatchPolicySpec{Clusters: []string{worker.Name}, Strategy: courierv1alpha1.BestFit}}
		Expect(c.Create(ctx, standing)).To(Succeed())
		_, err = kubectlCourier(ctx, admin, append(args, "--apply")...)
		Expect(err).To(MatchError(ContainSubstring("applying nothing, as 1 objects on the manager stand in the way:\n  - DispatchPolicy " + configName +
			" exists with clusters [" + worker.Name + "] and strategy BestFit, not [" + clusterName + "] and AllAtOnce as MultiKueueConfig " + configName + ": delete it")))
		copied := &corev1.Secret{}
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: secretName}, copied))).To(BeTrue(), "a refused run copied the Secret")
		Expect(c.Delete(ctx, standing)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(standing), standing)) }).Should(BeTrue())

		By("applying: the Secret copied, the objects applied, and Courier connected through them")
		out, err = kubectlCourier(ctx, admin, append(args, "--apply")...)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(HavePrefix("secret/" + secretName + " copied from " + kueueNS.Name + " to " + courier.Namespace + "\n" +
			"workercluster/" + clusterName + " applied\ndispatchpolicy/" + configName + " applied\nadmissioncheck/" + courierCheck + " applied\n"))
		Expect(c.Get(ctx, client.ObjectKey{Namespace: courier.Namespace, Name: secretName}, copied)).To(Succeed())
		Expect(copied.Annotations).To(HaveKeyWithValue(cli.CopiedFromAnnotation, kueueNS.Name+"/"+secretName))
		Expect(copied.Data).To(Equal(map[string][]byte{"kubeconfig": kubeconfigData}))
		Eventually(func(g Gomega) {
			wc := &courierv1alpha1.WorkerCluster{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: clusterName}, wc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(wc.Status.Conditions, courierv1alpha1.WorkerClusterActive)).To(BeTrue(), "conditions: %+v", wc.Status.Conditions)
			ac := &kueue.AdmissionCheck{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: courierCheck}, ac)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive)).To(BeTrue(), "conditions: %+v", ac.Status.Conditions)
		}).WithTimeout(time.Minute).Should(Succeed())

		By("applying again: nothing changes")
		out, err = kubectlCourier(ctx, admin, append(args, "--apply")...)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(HavePrefix("secret/" + secretName + " already in " + courier.Namespace + "\n"))

		By("moving the ClusterQueue over with the patch migrate prints, once MultiKueue runs none of its jobs")
		kueuesim.UpdateStatus(ctx, env.Manager, running, func(w *kueue.Workload) {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Job finished successfully"})
		})
		out, err = kubectlCourier(ctx, admin, append(args, "-o", "json")...)
		Expect(err).NotTo(HaveOccurred())
		report = cli.MigrateReport{}
		Expect(json.Unmarshal([]byte(out), &report)).To(Succeed(), out)
		Expect(report.ClusterQueues).To(HaveExactElements(And(HaveField("Name", cqName), HaveField("InFlight", 0))))
		patch := report.ClusterQueues[0].Patch
		prefix := "kubectl patch clusterqueue " + cqName + " --type json -p '"
		Expect(patch).To(And(HavePrefix(prefix), HaveSuffix("'")))
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: cqName}}
		Expect(c.Patch(ctx, cq, client.RawPatch(types.JSONPatchType, []byte(strings.TrimSuffix(strings.TrimPrefix(patch, prefix), "'"))))).To(Succeed())
		Expect(cq.Spec.AdmissionChecksStrategy.AdmissionChecks).To(HaveExactElements(HaveField("Name", kueue.AdmissionCheckReference(courierCheck))))

		By("dispatching a job of the ClusterQueue through Courier's check, to the worker of the MultiKueueCluster")
		courierSim := &kueuesim.Sim{Env: env, Check: kueue.AdmissionCheckReference(courierCheck)}
		tj := trainJobIn(ns).Obj()
		wl := courierSim.SubmitTo(ctx, tj, cqName)
		Eventually(func(g Gomega) { g.Expect(kueuesim.Read(ctx, g, worker, wl)).NotTo(BeNil()) }).Should(Succeed())
		kueuesim.AdmitOn(ctx, worker, wl)
		courierSim.ExpectCheck(ctx, wl, kueue.CheckStateReady, clusterName)
	})
})
