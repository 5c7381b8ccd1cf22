package foundation

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/act"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

// Courier keeps its check Pending with a JSON patch guarded by the check
// itself; the API server must apply it over writes to the rest of the
// Workload and refuse it once the check changed.
var _ = Describe("Keeping a check Pending on the manager's API server", func() {
	var (
		c    client.Client
		read *kueue.Workload
	)
	const check = "courier"
	nominate := plan.StatusChange{State: kueue.CheckStatePending, Message: "Waiting for a nominated worker.", Nominated: []string{"worker-1", "worker-2"}}

	BeforeEach(func(ctx context.Context) {
		manager := env.Clusters()[0]
		c = manager.Client
		ns, err := manager.CreateNamespace(ctx, "pending")
		Expect(err).NotTo(HaveOccurred())
		wl := createWithStatus(ctx, c, kueuetesting.MakeWorkload("wl", ns.Name).Queue("lq").ReserveQuota("cq").
			Check("other", kueue.CheckStateReady, "").Check(check, kueue.CheckStatePending, ""))
		read = wl.DeepCopy()
	})

	// kueueWrites writes the Workload's status as Kueue would after
	// Courier read it.
	kueueWrites := func(ctx context.Context, change func(*kueue.Workload)) {
		GinkgoHelper()
		wl := read.DeepCopy()
		change(wl)
		Expect(c.Status().Update(ctx, wl)).To(Succeed())
	}

	It("nominates over Kueue's newer write to a condition, and keeps it", func(ctx context.Context) {
		kueueWrites(ctx, func(wl *kueue.Workload) {
			meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadPodsReady, Status: metav1.ConditionFalse, Reason: "WaitForStart", Message: "Not all pods are ready or succeeded"})
		})
		patch, ok, err := act.PendingPatch(read, check, &nominate)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		stale := read.DeepCopy()
		Expect(c.Status().Patch(ctx, stale, patch)).To(Succeed())

		got := &kueue.Workload{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(read), got)).To(Succeed())
		Expect(got.Status.NominatedClusterNames).To(Equal(nominate.Nominated))
		Expect(got.Status.AdmissionChecks).To(HaveLen(2))
		Expect(got.Status.AdmissionChecks[1].State).To(Equal(kueue.CheckStatePending))
		Expect(got.Status.AdmissionChecks[1].Message).To(Equal(nominate.Message))
		Expect(got.Status.AdmissionChecks[0].State).To(Equal(kueue.CheckStateReady), "the other check is left alone")
		Expect(meta.FindStatusCondition(got.Status.Conditions, kueue.WorkloadPodsReady)).NotTo(BeNil(), "Kueue's condition stays")
		Expect(stale.ResourceVersion).To(Equal(got.ResourceVersion), "the patched Workload is read back from the response")
	})

	It("is refused once the check is no longer Pending", func(ctx context.Context) {
		kueueWrites(ctx, func(wl *kueue.Workload) {
			wl.Status.AdmissionChecks[1].State = kueue.CheckStateRetry
			wl.Status.AdmissionChecks[1].LastTransitionTime = metav1.NewTime(time.Now())
		})
		patch, ok, err := act.PendingPatch(read, check, &nominate)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		err = c.Status().Patch(ctx, read.DeepCopy(), patch)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a failed test is refused as invalid, got %v", err)

		got := &kueue.Workload{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(read), got)).To(Succeed())
		Expect(got.Status.NominatedClusterNames).To(BeEmpty())
		Expect(got.Status.AdmissionChecks[1].State).To(Equal(kueue.CheckStateRetry))
	})
})
