package fence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

var _ = Describe("The courier-fence binary", Ordered, func() {
	var binary, dir string

	BeforeAll(func(ctx context.Context) {
		dir = GinkgoT().TempDir()
		binary = filepath.Join(dir, "courier-fence")
		build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/courier-fence")
		build.Dir = env.RepoRoot
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "building courier-fence: %s", out)
	})

	It("refuses a manager kubeconfig without the WorkerCluster's name, in one line", func(ctx context.Context) {
		cmd := exec.CommandContext(ctx, binary, "--manager-kubeconfig", filepath.Join(dir, "none"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "courier-fence should exit with an error, got %v", err)
		Expect(exitErr.ExitCode()).To(Equal(1))
		Expect(stderr.String()).To(Equal("courier-fence: --manager-kubeconfig and --worker-cluster go together: give both, or neither to run without the manager\n"))
	})

	It("runs one replica at a time, as its shipped RBAC, and fences with probes and metrics served", func(ctx context.Context) {
		s := newScene(ctx)
		kubeconfig := filepath.Join(dir, s.ns+".kubeconfig")
		writeImpersonatingKubeconfig(s.worker, s.workerConfig.Impersonate.UserName, kubeconfig)
		s.createHeartbeat(ctx, s.origin)
		wl := s.workload(ctx, "running", s.mine())

		first := startFenceProcess(binary, kubeconfig, s.ns, "first")
		Eventually(s.fenceLease(ctx)).WithTimeout(framework.StopTimeout).Should(HaveField("Holder", "first"))
		second := startFenceProcess(binary, kubeconfig, s.ns, "second")
		Eventually(first.get(ctx, "/readyz")).Should(Equal(http.StatusOK))
		Eventually(second.get(ctx, "/healthz")).Should(Equal(http.StatusOK))

		By("leaving the heartbeat unrenewed since the fence started")
		Eventually(s.state(ctx, wl)).WithTimeout(timeout + margin).Should(Equal(deactivated))
		Eventually(s.fenceLease(ctx)).Should(Equal(fenceLease{Holder: "first", FencedOrigins: s.origin, Manager: "Unconfigured"}))
		Eventually(first.metrics(ctx)).Should(And(
			ContainSubstring("courier_fence_fenced_origins 1\n"),
			ContainSubstring(fmt.Sprintf("courier_fence_fenced_workloads_total{origin=%q} 1\n", s.origin)),
		))
		Consistently(s.fenceLease(ctx)).WithTimeout(2*time.Second).Should(HaveField("Holder", "first"), "the second replica waits")
		firstLeader := s.leader(ctx)
		Expect(firstLeader).NotTo(BeEmpty())

		By("stopping the first replica")
		first.stop()
		Eventually(s.fenceLease(ctx)).WithTimeout(framework.StopTimeout).Should(HaveField("Holder", "second"))
		Expect(s.leader(ctx)).NotTo(Or(BeEmpty(), Equal(firstLeader)))
	})
})

// leader is the holder of the fence's leader election Lease.
func (s *scene) leader(ctx context.Context) string {
	lease := &coordinationv1.Lease{}
	Expect(s.worker.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "courier-fence-leader"}, lease)).To(Succeed())
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// writeImpersonatingKubeconfig writes the worker's admin kubeconfig acting
// as user, so that the process has only user's permissions.
func writeImpersonatingKubeconfig(worker *framework.Cluster, user, path string) {
	data, err := worker.Kubeconfig(framework.AdminUser)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
}

// fenceProcess is a courier-fence running as a child process.
type fenceProcess struct {
	cmd                   *exec.Cmd
	exited                chan struct{}
	healthAddr, metricsAt string
}

// startFenceProcess starts the binary on the worker's namespace ns with a
// fast poll, and stops it by PID when the spec ends.
func startFenceProcess(binary, kubeconfig, ns, identity string) *fenceProcess {
	health, err := framework.FreeAddress()
	Expect(err).NotTo(HaveOccurred())
	metrics, err := framework.FreeAddress()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(binary, "--kubeconfig", kubeconfig, "--namespace", ns, "--identity", identity,
		"--poll-interval", pollInterval.String(), "--health-probe-bind-address", health, "--metrics-bind-address", metrics)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	p := &fenceProcess{cmd: cmd, exited: make(chan struct{}), healthAddr: health, metricsAt: metrics}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	DeferCleanup(func() {
		// Stop the process by PID whatever the outcome of the spec.
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		Eventually(p.exited).WithTimeout(framework.StopTimeout).Should(BeClosed())
	})
	return p
}

// stop sends SIGTERM, on which the fence gives up its leader Lease, and
// waits for the process to end.
func (p *fenceProcess) stop() {
	Expect(p.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	Eventually(p.exited).WithTimeout(framework.StopTimeout).Should(BeClosed())
}

func (p *fenceProcess) get(ctx context.Context, path string) func(Gomega) int {
	return func(g Gomega) int {
		code, _ := p.fetch(ctx, g, "http://"+p.healthAddr+path)
		return code
	}
}

func (p *fenceProcess) metrics(ctx context.Context) func(Gomega) string {
	return func(g Gomega) string {
		_, body := p.fetch(ctx, g, "http://"+p.metricsAt+"/metrics")
		return body
	}
}

func (p *fenceProcess) fetch(ctx context.Context, g Gomega, url string) (int, string) {
	g.Expect(p.exited).NotTo(BeClosed(), "courier-fence exited early")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}
