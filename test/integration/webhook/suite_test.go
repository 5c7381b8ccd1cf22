// Package webhook tests Courier's admission webhooks through a real
// kube-apiserver: the webhook configurations shipped in config/webhook,
// pointed at Courier's webhook server running in the test process.
package webhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// webhookManifests are the webhook configurations users install.
const webhookManifests = "config/webhook/manifests.yaml"

var (
	env     *framework.Environment
	courier *framework.Courier
)

func TestWebhook(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })

	By("writing a serving certificate for the webhook server")
	caPEM, certPEM, keyPEM, err := framework.ServingCertificate()
	Expect(err).NotTo(HaveOccurred())
	certDir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600)).To(Succeed())
	ports, err := framework.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())

	courier, err = env.StartCourier(ctx, func(c *configv1alpha1.Configuration) {
		c.Webhook = &configv1alpha1.Webhook{
			Enable:         ptr.To(true),
			Port:           ptr.To(int32(ports[0])),
			CertDir:        certDir,
			CertManagement: configv1alpha1.CertManagementExternal,
		}
		c.ExternalFrameworks = []configv1alpha1.ExternalFramework{{Name: "Job.v1.batch"}}
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })

	By("installing the shipped webhook configurations, pointed at the test process")
	objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, webhookManifests))
	Expect(err).NotTo(HaveOccurred())
	configs, err := framework.LocalWebhooks(objs, nil, ports[0], caPEM)
	Expect(err).NotTo(HaveOccurred())
	Expect(configs).To(HaveLen(2))
	for _, obj := range configs {
		if m, ok := obj.(*admissionv1.MutatingWebhookConfiguration); ok {
			// As docs/install.md has users do for each external framework.
			m.Webhooks[0].Rules = append(m.Webhooks[0].Rules, admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
			})
		}
		Expect(env.Manager.Client.Create(ctx, obj)).To(Succeed())
	}
	createQueues(ctx)
}, NodeTimeout(framework.StartTimeout))
