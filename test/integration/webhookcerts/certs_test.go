// Package webhookcerts tests Courier's Internal certificate management
// against a real kube-apiserver: the certificate Courier issues for its
// webhook Service, the Secret it keeps it in, the CA it injects into its
// webhook configurations, and the server that then serves it. A kubelet
// mounts the Secret into the pod; here the test copies it into certDir.
package webhookcerts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

func TestWebhookCerts(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook certificates suite")
}

var _ = It("issues the webhook certificate, keeps it in a Secret, injects its CA, and serves it", func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	env, err := framework.Start(ctx, framework.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	c := env.Manager.Client

	By("installing the shipped webhook configurations, with no CA, named as config/default names them")
	objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, "config/webhook/manifests.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, obj := range objs {
		obj.SetName("courier-" + obj.GetName())
	}
	Expect(framework.Apply(ctx, c, objs)).To(Succeed())

	certDir := GinkgoT().TempDir()
	ports, err := framework.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	courier, err := env.StartCourier(ctx, func(c *configv1alpha1.Configuration) {
		c.Webhook = &configv1alpha1.Webhook{Enable: ptr.To(true), Port: ptr.To(int32(ports[0])), CertDir: certDir}
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(courier.Stop()).To(Succeed()) })
	w := courier.Config.Webhook

	By("waiting for the certificate in the Secret")
	secret := &corev1.Secret{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: courier.Namespace, Name: w.SecretName}, secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveKey("ca.crt"))
		g.Expect(secret.Data).To(HaveKey("tls.crt"))
		g.Expect(secret.Data).To(HaveKey("tls.key"))
	}).Should(Succeed())

	By("mounting it, as the kubelet would")
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		Expect(os.WriteFile(filepath.Join(certDir, key), secret.Data[key], 0o600)).To(Succeed())
	}

	By("waiting for the CA in both webhook configurations")
	Eventually(func(g Gomega) {
		m := &admissionv1.MutatingWebhookConfiguration{}
		g.Expect(c.Get(ctx, types.NamespacedName{Name: w.MutatingConfigurationName}, m)).To(Succeed())
		for _, hook := range m.Webhooks {
			g.Expect(hook.ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]), "the CA of webhook %s", hook.Name)
		}
		v := &admissionv1.ValidatingWebhookConfiguration{}
		g.Expect(c.Get(ctx, types.NamespacedName{Name: w.ValidatingConfigurationName}, v)).To(Succeed())
		for _, hook := range v.Webhooks {
			g.Expect(hook.ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]), "the CA of webhook %s", hook.Name)
		}
	}).Should(Succeed())

	By("connecting to the webhook server as the API server would, through the Service's name")
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(secret.Data["ca.crt"])).To(BeTrue())
	Eventually(func(g Gomega) {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]), &tls.Config{
			RootCAs:    roots,
			ServerName: fmt.Sprintf("%s.%s.svc", w.ServiceName, courier.Namespace),
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conn.Close()).To(Succeed())
	}).WithTimeout(time.Minute).Should(Succeed())
}, NodeTimeout(2*framework.StartTimeout))
