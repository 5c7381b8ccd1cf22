package foundation

import (
	"context"
	"os"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The test environment", func() {
	It("runs an etcd and a kube-apiserver process for the manager and each worker", func(ctx context.Context) {
		Expect(env.Workers).To(HaveLen(2))
		for _, c := range env.Clusters() {
			pids := c.PIDs()
			Expect(pids).To(HaveLen(2), "cluster %s", c.Name)
			for _, pid := range pids {
				proc, err := os.FindProcess(pid)
				Expect(err).NotTo(HaveOccurred())
				Expect(proc.Signal(syscall.Signal(0))).To(Succeed(), "process %d of %s is alive", pid, c.Name)
			}
			info, err := c.Discovery().ServerVersion()
			Expect(err).NotTo(HaveOccurred())
			Expect(info.GitVersion).To(HavePrefix("v1.36."), "the API server reports its stamped version")
		}
	})
})
