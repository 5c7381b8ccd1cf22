package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/utils/ptr"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cli"
	"github.com/courierdev/courier/pkg/placementdecision"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/pkg/workercluster"
)

const (
	// courierNamespace is where Courier runs on the manager and reads the
	// workers' kubeconfig Secrets.
	courierNamespace = "courier-system"
	// secretReader is the plugin courier-values.yaml lists: the cluster
	// inventory's reference plugin, which hands out the token of the Secret
	// in Courier's namespace that the access provider's clusterName names.
	secretReader = "secretreader"
	// kueueNamespace is where MultiKueue reads its kubeconfig Secrets: the
	// namespace of the manager's Kueue.
	kueueNamespace = "kueue-system"
)

// workerAccess reads the kubeconfig Secret Courier reaches a worker
// through: the server and CA it dials, and the ServiceAccount its token is
// of.
func workerAccess(ctx context.Context, wc *courierv1alpha1.WorkerCluster) (*clientcmdv1.Cluster, *corev1.ServiceAccount) {
	GinkgoHelper()
	ref := wc.Spec.Kubeconfig.SecretRef
	secret := &corev1.Secret{}
	Expect(manager.client.Get(ctx, client.ObjectKey{Namespace: courierNamespace, Name: ref.Name}, secret)).To(Succeed())
	cfg, err := clientcmd.Load(secret.Data[ref.Key])
	Expect(err).NotTo(HaveOccurred())
	current := cfg.Contexts[cfg.CurrentContext]
	Expect(current).NotTo(BeNil(), "the kubeconfig of %s has no current context", wc.Name)
	server := cfg.Clusters[current.Cluster]
	Expect(server.CertificateAuthorityData).NotTo(BeEmpty(), "the kubeconfig of %s embeds its CA", wc.Name)
	// A ServiceAccount token's subject is system:serviceaccount:<ns>:<name>.
	parts := strings.Split(cfg.AuthInfos[current.AuthInfo].Token, ".")
	Expect(parts).To(HaveLen(3), "the kubeconfig of %s holds a ServiceAccount token", wc.Name)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	Expect(err).NotTo(HaveOccurred())
	var claims struct {
		Subject string `json:"sub"`
	}
	Expect(json.Unmarshal(payload, &claims)).To(Succeed())
	ns, name, ok := strings.Cut(strings.TrimPrefix(claims.Subject, "system:serviceaccount:"), ":")
	Expect(ok).To(BeTrue(), "token subject %q", claims.Subject)
	return &clientcmdv1.Cluster{Server: server.Server, CertificateAuthorityData: server.CertificateAuthorityData},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// kubectlCourier runs the plugin's command in-process against the manager.
func kubectlCourier(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", mustEnv("COURIER_E2E_MANAGER_KUBECONFIG"), "--cache-dir", GinkgoT().TempDir()}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// awaitConnected waits until the WorkerCluster is Active and Connected for
// its current spec and check holds of it.
func awaitConnected(ctx context.Context, name string, check func(g Gomega, wc *courierv1alpha1.WorkerCluster)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		wc := &courierv1alpha1.WorkerCluster{}
		g.Expect(manager.client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
		active := meta.FindStatusCondition(wc.Status.Conditions, courierv1alpha1.WorkerClusterActive)
		g.Expect(active).NotTo(BeNil())
		g.Expect(active.Status).To(Equal(metav1.ConditionTrue), "WorkerCluster %s: %s", name, active.Message)
		g.Expect(active.Reason).To(Equal(courierv1alpha1.ReasonConnected))
		g.Expect(active.ObservedGeneration).To(Equal(wc.Generation), "WorkerCluster %s: the condition is of an earlier spec", name)
		check(g, wc)
	}).Should(Succeed())
}

var _ = Describe("Fleet integration", func() {
	It("reaches a worker through a ClusterProfile with the cluster inventory's secretreader plugin, and publishes where a job runs as a PlacementDecision naming the profile", func(ctx context.Context) {
		w := workers[len(workers)-1]
		wc := &courierv1alpha1.WorkerCluster{}
		Expect(manager.client.Get(ctx, client.ObjectKey{Name: w.name}, wc)).To(Succeed())
		Expect(wc.Spec.Kubeconfig).NotTo(BeNil(), "the environment reaches %s through a kubeconfig Secret", w.name)
		server, sa := workerAccess(ctx, wc)

		By("minting a bound token for Courier's ServiceAccount on the worker, kept where the plugin reads it")
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
		Expect(w.client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
		token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: courierNamespace, Name: "profile-" + w.name + "-" + rand.String(5)},
			Data: map[string][]byte{"token": []byte(tr.Status.Token)}}
		Expect(manager.client.Create(ctx, token)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(manager.client.Delete(ctx, token)).To(Succeed()) })

		By("publishing a ClusterProfile of the worker, as a cluster inventory does, whose access provider is secretreader's")
		profileNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inventory-"}}
		Expect(manager.client.Create(ctx, profileNS)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(manager.client.Delete(ctx, profileNS)).To(Succeed()) })
		profile := &inventory.ClusterProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: profileNS.Name, Name: w.name, Labels: map[string]string{inventory.LabelClusterManagerKey: "e2e-inventory"}},
			Spec:       inventory.ClusterProfileSpec{DisplayName: w.name, ClusterManager: inventory.ClusterManager{Name: "e2e-inventory"}},
		}
		Expect(manager.client.Create(ctx, profile)).To(Succeed())
		execConfig, err := json.Marshal(map[string]string{"clusterName": token.Name})
		Expect(err).NotTo(HaveOccurred())
		server.Extensions = []clientcmdv1.NamedExtension{{Name: "client.authentication.k8s.io/exec", Extension: runtime.RawExtension{Raw: execConfig}}}
		profile.Status.AccessProviders = []inventory.AccessProvider{{Name: secretReader, Cluster: *server}}
		Expect(manager.client.Status().Update(ctx, profile)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(manager.client.Delete(ctx, profile)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(manager.client.Get(ctx, client.ObjectKeyFromObject(profile), &inventory.ClusterProfile{}))
			}).Should(BeTrue(), "ClusterProfile %s is still held", profile.Name)
		})

		By("moving the worker's WorkerCluster over to the profile")
		kubeconfig := wc.Spec.Kubeconfig.DeepCopy()
		setSource(ctx, w.name, nil, &courierv1alpha1.ClusterProfileReference{Namespace: profileNS.Name, Name: profile.Name})
		DeferCleanup(func(ctx context.Context) {
			By("moving the WorkerCluster back to its kubeconfig Secret, which releases the profile")
			setSource(ctx, w.name, kubeconfig, nil)
			awaitConnected(ctx, w.name, func(g Gomega, wc *courierv1alpha1.WorkerCluster) {
				got := &inventory.ClusterProfile{}
				g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(profile), got)).To(Succeed())
				g.Expect(controllerutil.ContainsFinalizer(got, workercluster.CredentialsFinalizer)).To(BeFalse(), "Courier still holds ClusterProfile %s", profile.Name)
			})
		})
		awaitConnected(ctx, w.name, func(g Gomega, wc *courierv1alpha1.WorkerCluster) {
			g.Expect(wc.Status.Credential).NotTo(BeNil())
			g.Expect(wc.Status.Credential.Plugin).To(Equal(secretReader))
			g.Expect(wc.Status.Credential.ExpiresAt).NotTo(BeNil(), "the bound token's expiry")
			g.Expect(wc.Status.Credential.ExpiresAt.Time).To(BeTemporally("~", tr.Status.ExpirationTimestamp.Time, time.Second))
			got := &inventory.ClusterProfile{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(profile), got)).To(Succeed())
			g.Expect(controllerutil.ContainsFinalizer(got, workercluster.CredentialsFinalizer)).To(BeTrue(), "Courier holds the profile it reaches the worker through")
		})

		By("dispatching a TrainJob to the worker and reading its PlacementDecision back")
		ns := queuesIn(ctx, "fleet", specQueues{managerGPUs: 2, workerGPUs: 2})
		courierCheck(ctx, ns, courierv1alpha1.DispatchPolicySpec{Clusters: []string{w.name}})
		tj := trainertesting.MakeTrainJob("profile-"+rand.String(5), ns).Queue(queue).ManagedBy(adapter.TrainJobManagedBy).GPUs(1).Obj()
		Expect(manager.client.Create(ctx, tj)).To(Succeed())
		wl := workloadOf(ctx, tj)
		expectCheckReady(ctx, wl, ns, w.name)
		Eventually(func(g Gomega) {
			pd := &inventory.PlacementDecision{}
			g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), pd)).To(Succeed())
			g.Expect(pd.Labels).To(HaveKeyWithValue(placementdecision.WorkerClusterLabel, w.name))
			g.Expect(pd.Labels).To(HaveKeyWithValue(inventory.PlacementKeyLabel, string(wl.UID)))
			g.Expect(pd.SchedulerName).To(Equal(courierv1alpha1.ControllerName))
			g.Expect(pd.Decisions).To(HaveExactElements(HaveField("ClusterProfileRef",
				inventory.ClusterProfileReference{Namespace: profileNS.Name, Name: profile.Name})))
		}).Should(Succeed())
		expectOnlyOn(ctx, tj, w)
		Eventually(func(g Gomega) {
			expectFinished(ctx, g, wl, kueue.WorkloadFinishedReasonSucceeded)
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})

	It("moves a manager set up for MultiKueue over with kubectl courier migrate, and Courier dispatches through what it applied", func(ctx context.Context) {
		ns := queuesIn(ctx, "migrate", specQueues{managerGPUs: 2, workerGPUs: 2})
		courierName := ns + "-courier"

		By("setting MultiKueue up over the workers as Kueue's documentation has it: kubeconfig Secrets in Kueue's namespace, a MultiKueueCluster each, a MultiKueueConfig, and its check on the ClusterQueue")
		kueueNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}
		if err := manager.client.Create(ctx, kueueNS); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		var names []string
		for _, w := range workers {
			wc := &courierv1alpha1.WorkerCluster{}
			Expect(manager.client.Get(ctx, client.ObjectKey{Name: w.name}, wc)).To(Succeed())
			ref := wc.Spec.Kubeconfig.SecretRef
			Expect(ref.Key).To(Equal(kueue.MultiKueueConfigSecretKey), "MultiKueue reads the key %s", kueue.MultiKueueConfigSecretKey)
			courierSecret := &corev1.Secret{}
			Expect(manager.client.Get(ctx, client.ObjectKey{Namespace: courierNamespace, Name: ref.Name}, courierSecret)).To(Succeed())
			created := []client.Object{
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueNamespace, Name: ref.Name},
					Data: map[string][]byte{kueue.MultiKueueConfigSecretKey: courierSecret.Data[ref.Key]}},
				&kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: w.name}, Spec: kueue.MultiKueueClusterSpec{
					ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{Location: ref.Name, LocationType: kueue.SecretLocationType}}}},
			}
			for _, obj := range created {
				Expect(manager.client.Create(ctx, obj)).To(Succeed())
				DeferCleanup(func(ctx context.Context) {
					Expect(client.IgnoreNotFound(manager.client.Delete(ctx, obj))).To(Succeed())
				})
			}
			names = append(names, w.name)
		}
		mkConfig := &kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: kueue.MultiKueueConfigSpec{Clusters: names}}
		Expect(manager.client.Create(ctx, mkConfig)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(manager.client.Delete(ctx, mkConfig)).To(Succeed()) })
		Expect(manager.client.Create(ctx, &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: kueue.AdmissionCheckSpec{
			ControllerName: kueue.MultiKueueControllerName,
			Parameters:     &kueue.AdmissionCheckParametersReference{APIGroup: kueue.SchemeGroupVersion.Group, Kind: "MultiKueueConfig", Name: ns}}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(manager.client.Delete(ctx, &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: courierName}}))).To(Succeed())
		})
		By("waiting until the manager's Kueue runs the MultiKueue check")
		Eventually(func(g Gomega) {
			check := &kueue.AdmissionCheck{}
			g.Expect(manager.client.Get(ctx, client.ObjectKey{Name: ns}, check)).To(Succeed())
			g.Expect(meta.FindStatusCondition(check.Status.Conditions, kueue.AdmissionCheckActive)).NotTo(BeNil(), "MultiKueue has not looked at AdmissionCheck %s", ns)
		}).Should(Succeed())

		By("printing what it would apply: the WorkerClusters Courier has, a DispatchPolicy and a check, and the ClusterQueue to move")
		out, err := kubectlCourier(ctx, "migrate", "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var report cli.MigrateReport
		Expect(json.Unmarshal([]byte(out), &report)).To(Succeed(), out)
		for _, w := range workers {
			wc := &courierv1alpha1.WorkerCluster{}
			Expect(manager.client.Get(ctx, client.ObjectKey{Name: w.name}, wc)).To(Succeed())
			Expect(report.WorkerClusters).To(ContainElement(And(HaveField("Name", w.name), HaveField("Spec.Kubeconfig", Equal(wc.Spec.Kubeconfig)))))
		}
		Expect(report.DispatchPolicies).To(ContainElement(And(HaveField("Name", ns), HaveField("Spec.Clusters", names))))
		Expect(report.AdmissionChecks).To(ContainElement(And(HaveField("Name", courierName), HaveField("Spec.ControllerName", courierv1alpha1.ControllerName))))
		var move *cli.QueueMove
		for i := range report.ClusterQueues {
			if report.ClusterQueues[i].Name == ns {
				move = &report.ClusterQueues[i]
			}
		}
		Expect(move).NotTo(BeNil(), "ClusterQueue %s is not among those to move: %s", ns, out)
		Expect(move.Replace).To(Equal(map[string]string{ns: courierName}))
		Expect(move.InFlight).To(BeZero())

		By("applying: the Secrets Courier has are left as they are, the policy and the check applied, and Courier takes the check")
		out, err = kubectlCourier(ctx, "migrate", "--apply")
		Expect(err).NotTo(HaveOccurred())
		for _, w := range workers {
			Expect(out).To(ContainSubstring("workercluster/" + w.name + " applied\n"))
		}
		Expect(out).To(ContainSubstring("dispatchpolicy/" + ns + " applied\n"))
		Expect(out).To(ContainSubstring("admissioncheck/" + courierName + " applied\n"))
		Expect(out).To(ContainSubstring(" already in " + courierNamespace + "\n"))
		awaitActive(ctx, courierName)

		By("moving the ClusterQueue over with the patch migrate printed")
		prefix := "kubectl patch clusterqueue " + ns + " --type json -p '"
		Expect(move.Patch).To(And(HavePrefix(prefix), HaveSuffix("'")))
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		Expect(manager.client.Patch(ctx, cq, client.RawPatch(types.JSONPatchType, []byte(strings.TrimSuffix(strings.TrimPrefix(move.Patch, prefix), "'"))))).To(Succeed())
		Expect(cq.Spec.AdmissionChecksStrategy.AdmissionChecks).To(HaveExactElements(HaveField("Name", kueue.AdmissionCheckReference(courierName))))

		By("sending a TrainJob of the ClusterQueue through Courier's check to a worker, where it runs to completion")
		tj := trainertesting.MakeTrainJob("migrated-"+rand.String(5), ns).Queue(queue).ManagedBy(adapter.TrainJobManagedBy).GPUs(1).Obj()
		Expect(manager.client.Create(ctx, tj)).To(Succeed())
		wl := workloadOf(ctx, tj)
		w := expectCheckReady(ctx, wl, courierName, "")
		expectOnlyOn(ctx, tj, w)
		Eventually(func(g Gomega) {
			expectFinished(ctx, g, wl, kueue.WorkloadFinishedReasonSucceeded)
		}).WithTimeout(3 * time.Minute).Should(Succeed())
	})
})

// setSource points a WorkerCluster at a kubeconfig Secret or a
// ClusterProfile.
func setSource(ctx context.Context, name string, kubeconfig *courierv1alpha1.KubeconfigSource, profile *courierv1alpha1.ClusterProfileReference) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		wc := &courierv1alpha1.WorkerCluster{}
		g.Expect(manager.client.Get(ctx, client.ObjectKey{Name: name}, wc)).To(Succeed())
		wc.Spec.Kubeconfig, wc.Spec.ClusterProfileRef = kubeconfig, profile
		g.Expect(manager.client.Update(ctx, wc)).To(Succeed())
	}).Should(Succeed())
}

// expectCheckReady waits until the named check of a Workload is Ready and
// the Workload placed, on the worker named if one is, and returns the
// worker.
func expectCheckReady(ctx context.Context, wl *kueue.Workload, check, worker string) cluster {
	GinkgoHelper()
	var placed string
	Eventually(func(g Gomega) {
		got := &kueue.Workload{}
		g.Expect(manager.client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
		var state *kueue.AdmissionCheckState
		for i := range got.Status.AdmissionChecks {
			if got.Status.AdmissionChecks[i].Name == kueue.AdmissionCheckReference(check) {
				state = &got.Status.AdmissionChecks[i]
			}
		}
		g.Expect(state).NotTo(BeNil(), "Workload %s has no check %s: %s", wl.Name, check, workloadState(got))
		g.Expect(state.State).To(Equal(kueue.CheckStateReady), "%s", workloadState(got))
		g.Expect(got.Status.ClusterName).NotTo(BeNil())
		placed = *got.Status.ClusterName
	}).Should(Succeed())
	if worker != "" {
		Expect(placed).To(Equal(worker))
	}
	for _, w := range workers {
		if w.name == placed {
			return w
		}
	}
	Fail("placed on unknown worker " + placed)
	return cluster{}
}
