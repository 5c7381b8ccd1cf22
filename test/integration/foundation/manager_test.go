package foundation

import (
	"context"
	"fmt"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/controllermanager"
	"github.com/courierdev/courier/test/integration/framework"
)

var _ = Describe("Courier's manager", func() {
	It("starts against a real API server, serves probes and plain HTTP metrics when asked, and takes the leader lease", func(ctx context.Context) {
		ns, err := env.Manager.CreateNamespace(ctx, "courier")
		Expect(err).NotTo(HaveOccurred())
		healthAddr, err := framework.FreeAddress()
		Expect(err).NotTo(HaveOccurred())
		metricsAddr, err := framework.FreeAddress()
		Expect(err).NotTo(HaveOccurred())

		cfg := &configv1alpha1.Configuration{
			Namespace: ns.Name,
			Health:    &configv1alpha1.HealthEndpoint{BindAddress: healthAddr},
			Metrics:   &configv1alpha1.MetricsEndpoint{BindAddress: metricsAddr, SecureServing: ptr.To(false)},
		}
		configv1alpha1.SetDefaults(cfg)
		mgr, err := controllermanager.New(env.Manager.Config, cfg, controllermanager.Flags{})
		Expect(err).NotTo(HaveOccurred())

		mgrCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).WithTimeout(framework.StopTimeout).Should(Receive(Not(HaveOccurred())))
		})

		for _, path := range []string{"/healthz", "/readyz"} {
			url := fmt.Sprintf("http://%s%s", healthAddr, path)
			Eventually(func(g Gomega) {
				g.Expect(httpGet(ctx, url)).To(Equal(http.StatusOK))
			}).Should(Succeed(), "GET %s", url)
		}
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: configv1alpha1.DefaultLeaderElectionID}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(httpGet(ctx, fmt.Sprintf("http://%s/metrics", metricsAddr))).To(Equal(http.StatusOK))
		}).Should(Succeed())
	})

	It("reads from the cache through Courier's scheme once started", func(ctx context.Context) {
		healthAddr, err := framework.FreeAddress()
		Expect(err).NotTo(HaveOccurred())
		cfg := &configv1alpha1.Configuration{
			Health:         &configv1alpha1.HealthEndpoint{BindAddress: healthAddr},
			Metrics:        &configv1alpha1.MetricsEndpoint{BindAddress: "0"},
			LeaderElection: leaderElectionOff(),
		}
		configv1alpha1.SetDefaults(cfg)
		mgr, err := controllermanager.New(env.Manager.Config, cfg, controllermanager.Flags{})
		Expect(err).NotTo(HaveOccurred())
		mgrCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).WithTimeout(framework.StopTimeout).Should(Receive(Not(HaveOccurred())))
		})
		Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())

		ns, err := env.Manager.CreateNamespace(ctx, "cache")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got := &corev1.Namespace{}
			g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(ns), got)).To(Succeed())
			g.Expect(got.UID).To(Equal(ns.UID))
		}).Should(Succeed())
	})
})

func leaderElectionOff() *componentconfig.LeaderElectionConfiguration {
	return &componentconfig.LeaderElectionConfiguration{LeaderElect: ptr.To(false)}
}

func httpGet(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
