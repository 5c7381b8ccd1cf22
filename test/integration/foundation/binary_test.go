package foundation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

var _ = Describe("The courier binary", Ordered, func() {
	var binary, dir string

	BeforeAll(func(ctx context.Context) {
		dir = GinkgoT().TempDir()
		binary = filepath.Join(dir, "courier")
		build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/courier")
		build.Dir = env.RepoRoot
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "building courier: %s", out)
	})

	It("exits non-zero on an invalid configuration, naming the field", func(ctx context.Context) {
		path := filepath.Join(dir, "bad.yaml")
		Expect(os.WriteFile(path, []byte("apiVersion: config.courier.dev/v1alpha1\nkind: Configuration\nworkerClient: {qps: -1}\n"), 0o600)).To(Succeed())
		cmd := exec.CommandContext(ctx, binary, "--config", path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "courier should exit with an error, got %v", err)
		Expect(exitErr.ExitCode()).To(Equal(1))
		Expect(stderr.String()).To(ContainSubstring("workerClient.qps: Invalid value: -1: must be greater than zero"))
		Expect(stderr.String()).To(ContainSubstring(path))
	})

	It("serves /healthz and /readyz with a good configuration and the manager's kubeconfig", func(ctx context.Context) {
		healthAddr, err := framework.FreeAddress()
		Expect(err).NotTo(HaveOccurred())
		cfgPath := filepath.Join(dir, "good.yaml")
		Expect(os.WriteFile(cfgPath, fmt.Appendf(nil, `apiVersion: config.courier.dev/v1alpha1
kind: Configuration
health: {bindAddress: %q}
metrics: {bindAddress: "0"}
leaderElection: {leaderElect: false}
`, healthAddr), 0o600)).To(Succeed())
		kubeconfig, err := env.Manager.Kubeconfig(framework.AdminUser)
		Expect(err).NotTo(HaveOccurred())
		kubeconfigPath := filepath.Join(dir, "kubeconfig")
		Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())

		cmd := exec.Command(binary, "--config", cfgPath, "--kubeconfig", kubeconfigPath)
		cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(cmd.Start()).To(Succeed())
		var waitErr error
		exited := make(chan struct{})
		go func() { waitErr = cmd.Wait(); close(exited) }()
		DeferCleanup(func() {
			// Stop the process by PID whatever the outcome of the spec.
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			Eventually(exited).WithTimeout(framework.StopTimeout).Should(BeClosed())
		})

		for _, path := range []string{"/healthz", "/readyz"} {
			url := fmt.Sprintf("http://%s%s", healthAddr, path)
			Eventually(func(g Gomega) {
				g.Expect(exited).NotTo(BeClosed(), "courier exited early")
				g.Expect(httpGet(ctx, url)).To(Equal(http.StatusOK))
			}).Should(Succeed(), "GET %s", url)
		}

		By("stopping on SIGTERM without an error")
		Expect(syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)).To(Succeed())
		Eventually(exited).WithTimeout(framework.StopTimeout).Should(BeClosed())
		Expect(waitErr).NotTo(HaveOccurred())
	})

	// The dispatcher's event filter reads AdmissionChecks from the cache
	// for each Workload with a check; stopped before that informer synced,
	// such a read must not hold the shutdown.
	It("stops on SIGTERM at once after it starts, with a Workload carrying an admission check", func(ctx context.Context) {
		manager := env.Clusters()[0]
		ns, err := manager.CreateNamespace(ctx, "stop")
		Expect(err).NotTo(HaveOccurred())
		createWithStatus(ctx, manager.Client, kueuetesting.MakeWorkload("wl", ns.Name).Queue("lq").ReserveQuota("cq").
			Check("courier", kueue.CheckStatePending, ""))

		p, err := env.StartCourierProcess(ctx, framework.CourierProcessOptions{Binary: binary, Dir: GinkgoT().TempDir(), Namespace: "courier-system"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Stop)
		Expect(syscall.Kill(p.PID, syscall.SIGTERM)).To(Succeed())
		Eventually(p.Done()).WithTimeout(framework.StopTimeout).Should(BeClosed(), "courier did not stop within %s of SIGTERM", framework.StopTimeout)
		Expect(p.ExitErr()).NotTo(HaveOccurred())
	})
})
