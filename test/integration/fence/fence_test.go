package fence

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/fence"
	"github.com/courierdev/courier/test/integration/framework"
)

var _ = Describe("The fence without the manager", func() {
	var s *scene
	BeforeEach(func(ctx context.Context) {
		s = newScene(ctx)
	})

	It("leaves an origin's copies alone while its heartbeat is renewed, and says so on its Lease", func(ctx context.Context) {
		s.createHeartbeat(ctx, s.origin)
		s.renew(s.origin)
		s.startFence(nil, "")
		wl := s.workload(ctx, "running", s.mine())

		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "fence-" + s.ns, FencedOrigins: "", Manager: string(fence.ManagerUnconfigured)}))
		Consistently(s.state(ctx, wl)).WithTimeout(3 * timeout).WithPolling(500 * time.Millisecond).Should(Equal(untouched))
		Expect(s.fencedEvents(ctx, wl)(Default)).To(BeZero())
	})

	It("deactivates every running copy of an origin whose heartbeat stopped, after its timeout, and nothing else", func(ctx context.Context) {
		const other = "other-origin"
		s.createHeartbeat(ctx, s.origin)
		s.createHeartbeat(ctx, other)
		stopRenewing := s.renew(s.origin)
		s.renew(other)
		s.startFence(nil, "")
		running := s.workload(ctx, "running", s.mine())
		pending := s.workload(ctx, "pending", s.mine())
		finished := s.workload(ctx, "finished", s.mine())
		s.finish(ctx, finished)
		others := s.workload(ctx, "others", map[string]string{courier.OriginLabel: other})
		unlabelled := s.workload(ctx, "unlabelled", nil)
		all := []client.ObjectKey{running, pending, finished, others, unlabelled}
		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "fence-" + s.ns, Manager: string(fence.ManagerUnconfigured)}))

		By("stopping the heartbeat")
		stopRenewing()
		stopped := time.Now()
		// The last renewal was at most renewEvery before; the fence counts
		// from the poll that showed it.
		Consistently(s.state(ctx, running)).WithTimeout(timeout - renewEvery - pollInterval - 500*time.Millisecond).Should(Equal(untouched))
		Eventually(s.states(ctx, all...)).WithTimeout(timeout + margin).Should(Equal([]copyState{deactivated, deactivated, untouched, untouched, untouched}))
		GinkgoWriter.Printf("Fenced %s after the heartbeat stopped\n", time.Since(stopped))
		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "fence-" + s.ns, FencedOrigins: s.origin, Manager: string(fence.ManagerUnconfigured)}))
		Eventually(s.fencedEvents(ctx, running)).Should(Equal(1))
		Eventually(s.fencedEvents(ctx, pending)).Should(Equal(1))

		By("creating a copy of the fenced origin")
		late := s.workload(ctx, "late", s.mine())
		Eventually(s.state(ctx, late)).Should(Equal(deactivated))
		Consistently(s.states(ctx, finished, others, unlabelled)).WithTimeout(time.Second).Should(Equal([]copyState{untouched, untouched, untouched}))
	})

	It("fences no copy once the heartbeat resumes, and never reactivates one", func(ctx context.Context) {
		s.createHeartbeat(ctx, s.origin)
		s.startFence(nil, "")
		before := s.workload(ctx, "before", s.mine())
		By("leaving the heartbeat unrenewed since the fence started")
		Eventually(s.state(ctx, before)).WithTimeout(timeout + margin).Should(Equal(deactivated))

		By("renewing the heartbeat again")
		s.renew(s.origin)
		Eventually(s.fenceLease(ctx)).Should(HaveField("FencedOrigins", ""))
		after := s.workload(ctx, "after", s.mine())
		Consistently(s.states(ctx, before, after)).WithTimeout(2 * timeout).Should(Equal([]copyState{deactivated, untouched}))
	})

	It("forgets an origin whose heartbeat Lease is deleted", func(ctx context.Context) {
		s.createHeartbeat(ctx, s.origin)
		s.startFence(nil, "")
		Eventually(s.fenceLease(ctx)).WithTimeout(timeout + margin).Should(HaveField("FencedOrigins", s.origin))

		By("deleting the heartbeat Lease")
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: courier.HeartbeatLeasePrefix + s.origin}}
		Expect(s.worker.Client.Delete(ctx, lease)).To(Succeed())
		Eventually(s.fenceLease(ctx)).Should(HaveField("FencedOrigins", ""))
		after := s.workload(ctx, "after", s.mine())
		Consistently(s.state(ctx, after)).WithTimeout(2 * time.Second).Should(Equal(untouched))
	})
})

var _ = Describe("The fence reading the manager", func() {
	var (
		s  *scene
		wc string
	)
	BeforeEach(func(ctx context.Context) {
		s = newScene(ctx)
		wc = "wc-" + s.ns
		workerCluster(ctx, wc)
	})

	It("keeps a stale origin's copies while the manager has not revoked the worker, and fences them once it has", func(ctx context.Context) {
		manager := grantManager(ctx, wc)
		By("granting the fence get on its own WorkerCluster only")
		other := "wc-other-" + s.ns
		workerCluster(ctx, other)
		readAs, err := client.New(manager, client.Options{Scheme: framework.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(readAs.Get(ctx, client.ObjectKey{Name: wc}, &courier.WorkerCluster{})).To(Succeed())
		Expect(apierrors.IsForbidden(readAs.Get(ctx, client.ObjectKey{Name: other}, &courier.WorkerCluster{}))).To(BeTrue())

		s.createHeartbeat(ctx, s.origin)
		s.startFence(manager, wc)
		wl := s.workload(ctx, "running", s.mine())
		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "fence-" + s.ns, Manager: string(fence.ManagerReading)}))

		By("leaving the heartbeat unrenewed for 3 times its timeout")
		Consistently(s.state(ctx, wl)).WithTimeout(3 * timeout).WithPolling(500 * time.Millisecond).Should(Equal(untouched))
		Expect(s.fenceLease(ctx)(Default)).To(HaveField("FencedOrigins", ""))

		By("revoking the worker on the manager")
		revoke(ctx, wc)
		Eventually(s.state(ctx, wl)).WithTimeout(margin).Should(Equal(deactivated))
		Eventually(s.fencedEvents(ctx, wl)).Should(Equal(1))
		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "fence-" + s.ns, FencedOrigins: s.origin, Manager: string(fence.ManagerReading)}))
	})

	It("fences a stale origin once the manager has not answered for the heartbeat's timeout", Serial, func(ctx context.Context) {
		s.createHeartbeat(ctx, s.origin)
		s.startFence(grantManager(ctx, wc), wc)
		wl := s.workload(ctx, "running", s.mine())
		Eventually(s.fenceLease(ctx)).Should(HaveField("Manager", string(fence.ManagerReading)))
		Consistently(s.state(ctx, wl)).WithTimeout(2 * timeout).Should(Equal(untouched))

		By("hanging the manager's API server: connections accepted, nothing answered")
		paused := time.Now()
		Expect(env.Manager.PauseAPIServer()).To(Succeed())
		DeferCleanup(env.Manager.ResumeAPIServer)
		// The last successful read was at most a poll before.
		Consistently(s.state(ctx, wl)).WithTimeout(timeout - pollInterval - 500*time.Millisecond - time.Since(paused)).Should(Equal(untouched))
		Eventually(s.state(ctx, wl)).WithTimeout(timeout + margin).Should(Equal(deactivated))
		GinkgoWriter.Printf("Fenced %s after the manager stopped answering\n", time.Since(paused))
		Eventually(s.fenceLease(ctx)).WithTimeout(margin).Should(Equal(fenceLease{Holder: "fence-" + s.ns, FencedOrigins: s.origin, Manager: string(fence.ManagerUnreachable)}))
	})

	It("fences a stale origin when the manager was never reachable", func(ctx context.Context) {
		closed, err := framework.FreeAddress()
		Expect(err).NotTo(HaveOccurred())
		manager := rest.CopyConfig(env.Manager.Config)
		manager.Host = "https://" + closed
		s.createHeartbeat(ctx, s.origin)
		s.startFence(manager, wc)
		wl := s.workload(ctx, "running", s.mine())
		Eventually(s.state(ctx, wl)).WithTimeout(timeout + margin).Should(Equal(deactivated))
		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "fence-" + s.ns, FencedOrigins: s.origin, Manager: string(fence.ManagerUnreachable)}))
	})
})
