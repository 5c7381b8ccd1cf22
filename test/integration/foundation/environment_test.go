package foundation

import (
	"context"
	"os"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("The test environment", func() {
	It("runs etcd, kube-apiserver and kube-controller-manager for the manager and each worker", func(ctx context.Context) {
		Expect(env.Workers).To(HaveLen(2))
		for _, c := range env.Clusters() {
			pids := c.PIDs()
			Expect(pids).To(HaveLen(3), "cluster %s", c.Name)
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

	It("collects garbage: an object goes with its owner, as in a real cluster", func(ctx context.Context) {
		c := env.Workers[0]
		ns, err := c.CreateNamespace(ctx, "gc")
		Expect(err).NotTo(HaveOccurred())
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns.Name}}
		Expect(c.Client.Create(ctx, owner)).To(Succeed())
		owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}}}
		Expect(c.Client.Create(ctx, owned)).To(Succeed())
		Expect(c.Client.Delete(ctx, owner)).To(Succeed())
		Eventually(func(g Gomega) {
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(owned), &corev1.ConfigMap{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the owned ConfigMap is still there: %v", err)
		}).Should(Succeed())
	})
})
