// Package fence tests the worker-side fence (pkg/fence) in the test
// process against real API servers: a manager, and a worker with Kueue's
// CRDs, the fence running as its shipped RBAC grants (config/worker).
package fence

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/courierdev/courier/test/integration/framework"
)

var env *framework.Environment

func TestFence(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Fence suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = framework.Start(ctx, framework.Options{Workers: 1})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
}, NodeTimeout(framework.StartTimeout))
