package foundation

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// metricsReaderRole is the ClusterRole config/rbac ships for scrapers.
const metricsReaderRole = "config/rbac/metrics_reader_role.yaml"

var _ = Describe("Courier's metrics by default", func() {
	It("refuse an unauthenticated or unauthorized scrape, and serve a ServiceAccount bound to the metrics-reader role over HTTPS", func(ctx context.Context) {
		metricsAddr, err := framework.FreeAddress()
		Expect(err).NotTo(HaveOccurred())
		// As CourierUser with the shipped RBAC, which must allow the token
		// and access reviews the metrics filter makes.
		c, err := env.StartCourier(ctx, func(cfg *configv1alpha1.Configuration) {
			cfg.Metrics = &configv1alpha1.MetricsEndpoint{BindAddress: metricsAddr}
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Stop)
		Expect(*c.Config.Metrics.SecureServing).To(BeTrue(), "metrics must be secure by default")

		reader := serviceAccountToken(ctx, c.Namespace, "prometheus")
		stranger := serviceAccountToken(ctx, c.Namespace, "stranger")
		objs, err := framework.ReadManifests(filepath.Join(env.RepoRoot, metricsReaderRole))
		Expect(err).NotTo(HaveOccurred())
		Expect(framework.Apply(ctx, env.Manager.Client, objs)).To(Succeed())
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: objs[0].GetName()},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: c.Namespace}},
		}
		Expect(env.Manager.Client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Manager.Client.Delete(ctx, binding)).To(Succeed())
		})

		url := fmt.Sprintf("https://%s/metrics", metricsAddr)
		Eventually(func(g Gomega) {
			code, body, err := scrape(ctx, url, reader)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("courier_build_info{"))
		}).Should(Succeed(), "a ServiceAccount bound to the metrics-reader role scrapes %s", url)

		code, _, err := scrape(ctx, url, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusUnauthorized), "a scrape without a token")
		// controller-runtime's filter answers 500 when the TokenReview
		// rejects a token; refused all the same.
		code, body, err := scrape(ctx, url, "not-a-token")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusInternalServerError), "a scrape with a token the API server does not know")
		Expect(body).NotTo(ContainSubstring("courier_"))
		code, _, err = scrape(ctx, url, stranger)
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusForbidden), "a ServiceAccount not bound to the metrics-reader role")
		code, body, err = scrape(ctx, fmt.Sprintf("http://%s/metrics", metricsAddr), "")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusBadRequest), "plain HTTP to the HTTPS port")
		Expect(body).NotTo(ContainSubstring("courier_"))
	})
})

// serviceAccountToken creates a ServiceAccount and returns a token the
// API server issued for it, as a pod's projected token would be.
func serviceAccountToken(ctx context.Context, namespace, name string) string {
	GinkgoHelper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	Expect(env.Manager.Client.Create(ctx, sa)).To(Succeed())
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(env.Manager.Client.SubResource("token").Create(ctx, sa, req)).To(Succeed())
	Expect(req.Status.Token).NotTo(BeEmpty())
	return req.Status.Token
}

// scrape GETs url with a bearer token, if any, trusting any certificate:
// Courier's is self-signed; what is checked here is who may read.
func scrape(ctx context.Context, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
