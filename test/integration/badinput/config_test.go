package badinput

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/config"
)

// configHeader starts every Configuration file.
const configHeader = "apiVersion: config.courier.dev/v1alpha1\nkind: Configuration\n"

// Courier refuses to start on these files: cmd/courier prints the error of
// config.Load and exits 1 (test/integration/foundation runs the binary on
// one of them).
var _ = DescribeTable("A Configuration file with a bad external framework",
	func(body string, want ...string) {
		path := filepath.Join(GinkgoT().TempDir(), "courier.yaml")
		Expect(os.WriteFile(path, []byte(body), 0o600)).To(Succeed())
		_, err := config.Load(path)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(path), "the error names the file")
		for _, w := range want {
			Expect(err.Error()).To(ContainSubstring(w))
		}
	},
	Entry("is not YAML at all", "\x00\x01 not: [yaml",
		"decoding configuration"),
	Entry("has a misspelt field", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n  managedby: {path: spec.managedBy}\n",
		"decoding configuration", `unknown field "externalFrameworks[0].managedby"`),
	Entry("names a kind without version and group", configHeader+"externalFrameworks:\n- name: Job\n",
		"externalFrameworks[0].name", "must have the form Kind.version.group, such as Job.v1.batch"),
	Entry("names a lower-case kind", configHeader+"externalFrameworks:\n- name: job.v1.batch\n",
		"externalFrameworks[0].name", `kind "job" must be a capitalised identifier`),
	Entry("lists a kind twice, at two versions", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n- name: Job.v2.batch\n",
		"externalFrameworks[1].name: Duplicate value"),
	Entry("lists TrainJob, which is built in", configHeader+"externalFrameworks:\n- name: TrainJob.v1alpha1.trainer.kubeflow.org\n",
		"externalFrameworks[0].name: Forbidden: TrainJob is built in; remove it from externalFrameworks"),
	Entry("puts managedBy outside spec", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n  managedBy: {path: metadata.managedBy}\n",
		"externalFrameworks[0].managedBy.path", "must be a dot-separated field path under spec"),
	Entry("has an empty segment in the managedBy path", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n  managedBy: {path: spec..managedBy}\n",
		"externalFrameworks[0].managedBy.path", `segment "" is not a field name`),
	Entry("has a managedBy value longer than Kubernetes allows", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n  managedBy: {value: example.com/"+longName(70)+"}\n",
		"externalFrameworks[0].managedBy.value", "must be 1 to"),
	Entry("lists a nested status field", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n  status: {fields: [conditions.type]}\n",
		"externalFrameworks[0].status.fields[0]", "must be the name of a top-level status field"),
	Entry("forwards managedBy, which each side sets", configHeader+"externalFrameworks:\n- name: Job.v1.batch\n  managedBy: {path: spec.managedBy}\n  forwardedSpecPaths: [spec.managedBy]\n",
		"externalFrameworks[0].forwardedSpecPaths[0]", "spec.managedBy is set by Kueue and Courier on each side"),
)

var _ = Describe("An external framework the manager does not serve", func() {
	It("is named in the AdmissionCheck's message, with the fix, while the check stays Active for the rest", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			ac := &kueue.AdmissionCheck{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Name: checkName}, ac)).To(Succeed())
			cond := meta.FindStatusCondition(ac.Status.Conditions, kueue.AdmissionCheckActive)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Message).To(ContainSubstring("Not dispatching " + unservedKind + ": the manager's API server does not serve them; install their CRDs on the manager and restart Courier."))
		}).Should(Succeed())
	})
})
