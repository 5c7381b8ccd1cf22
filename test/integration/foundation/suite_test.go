package foundation

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

var env *framework.Environment

func TestFoundation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Foundation suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, err = framework.Start(ctx, framework.Options{Workers: 2})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(env.Stop()).To(Succeed())
	})
}, NodeTimeout(framework.StartTimeout))

// createWithStatus creates w's Workload, then writes the status w gives it
// (condition and check times stamped now, as the API requires), and
// deletes it after the spec: without a namespace controller the namespace
// keeps it, and a later spec's Courier on this API server would take it up.
func createWithStatus(ctx context.Context, c client.Client, w *kueuetesting.WorkloadWrapper) *kueue.Workload {
	GinkgoHelper()
	wl := w.Obj()
	status := *wl.Status.DeepCopy()
	Expect(c.Create(ctx, wl)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(c.Delete(ctx, wl))).To(Succeed())
	})
	wl.Status = status
	for i := range wl.Status.AdmissionChecks {
		wl.Status.AdmissionChecks[i].LastTransitionTime = metav1.Now()
	}
	for i := range wl.Status.Conditions {
		wl.Status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	Expect(c.Status().Update(ctx, wl)).To(Succeed())
	return wl
}
