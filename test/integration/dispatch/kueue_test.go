package dispatch

// The integration suites run no Kueue: these helpers play its part, on the
// manager (create the Workload, reserve quota, evict and requeue on Retry)
// and on the workers (admit, evict, finish the copies).

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

// submit creates the TrainJob and, as the manager's Kueue would, its
// Workload with Courier's check Pending and quota reserved in "cq".
func submit(ctx context.Context, tj *trainer.TrainJob) *kueue.Workload {
	return submitTo(ctx, tj, "cq")
}

// submitTo is submit into a given ClusterQueue.
func submitTo(ctx context.Context, tj *trainer.TrainJob, cq string) *kueue.Workload {
	Expect(env.Manager.Client.Create(ctx, tj)).To(Succeed())
	wl := kueuetesting.MakeWorkload("trainjob-"+tj.Name, tj.Namespace).Queue("lq").
		Owner(trainer.GroupVersion.String(), trainer.TrainJobKind, tj.Name, string(tj.UID)).Obj()
	Expect(env.Manager.Client.Create(ctx, wl)).To(Succeed())
	reserveQuotaIn(ctx, wl, cq)
	return wl
}

// reserveQuota admits the manager Workload into ClusterQueue "cq" with
// Courier's check Pending, as Kueue does after (re)queueing.
func reserveQuota(ctx context.Context, wl *kueue.Workload) {
	reserveQuotaIn(ctx, wl, "cq")
}

func reserveQuotaIn(ctx context.Context, wl *kueue.Workload, cq string) {
	updateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) {
		reserved := kueuetesting.MakeWorkload(w.Name, w.Namespace).ReserveQuota(cq).Obj()
		w.Status.Admission = reserved.Status.Admission
		meta.SetStatusCondition(&w.Status.Conditions, reserved.Status.Conditions[0])
		meta.RemoveStatusCondition(&w.Status.Conditions, kueue.WorkloadEvicted)
		setCheck(w, kueue.CheckStatePending, "")
	})
}

// evictAndRequeue does what the manager's Kueue does when a check turns
// Retry: evict (clearing the placement and resetting the check), then
// release the quota.
func evictAndRequeue(ctx context.Context, wl *kueue.Workload) {
	updateStatus(ctx, env.Manager, wl, func(w *kueue.Workload) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue,
			Reason: "AdmissionCheck", Message: "Evicted due to AdmissionCheck in Retry state"})
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse,
			Reason: "Pending", Message: "Requeued"})
		w.Status.Admission = nil
		w.Status.ClusterName = nil
		w.Status.NominatedClusterNames = nil
		setCheck(w, kueue.CheckStatePending, "Reset to Pending after eviction.")
	})
}

func setCheck(w *kueue.Workload, state kueue.CheckState, msg string) {
	for i := range w.Status.AdmissionChecks {
		if w.Status.AdmissionChecks[i].Name == checkName {
			w.Status.AdmissionChecks[i].State, w.Status.AdmissionChecks[i].Message = state, msg
			return
		}
	}
	w.Status.AdmissionChecks = append(w.Status.AdmissionChecks, kueue.AdmissionCheckState{
		Name: checkName, State: state, Message: msg, LastTransitionTime: metav1.Now(),
	})
}

// admitOn admits the Workload's copy on a worker, as its Kueue would.
func admitOn(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload) {
	updateStatus(ctx, worker, wl, func(w *kueue.Workload) {
		reserved := kueuetesting.MakeWorkload(w.Name, w.Namespace).ReserveQuota("worker-cq").Admit(time.Now()).Obj()
		w.Status.Admission = reserved.Status.Admission
		for _, c := range reserved.Status.Conditions {
			meta.SetStatusCondition(&w.Status.Conditions, c)
		}
	})
}

// setRemoteCondition sets a condition on the Workload's copy on a worker.
func setRemoteCondition(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload, cond metav1.Condition) {
	updateStatus(ctx, worker, wl, func(w *kueue.Workload) {
		meta.SetStatusCondition(&w.Status.Conditions, cond)
	})
}

func updateStatus(ctx context.Context, c *framework.Cluster, wl *kueue.Workload, mutate func(*kueue.Workload)) {
	EventuallyWithOffset(2, func(g Gomega) {
		w := &kueue.Workload{}
		g.Expect(c.Client.Get(ctx, client.ObjectKeyFromObject(wl), w)).To(Succeed())
		mutate(w)
		g.Expect(c.Client.Status().Update(ctx, w)).To(Succeed())
	}).Should(Succeed())
}

// managerWorkload reads the manager Workload.
func managerWorkload(ctx context.Context, g Gomega, wl *kueue.Workload) *kueue.Workload {
	got := &kueue.Workload{}
	g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(Succeed())
	return got
}

// checkState returns Courier's check on a Workload.
func checkState(w *kueue.Workload) kueue.AdmissionCheckState {
	for _, c := range w.Status.AdmissionChecks {
		if c.Name == checkName {
			return c
		}
	}
	return kueue.AdmissionCheckState{}
}

// expectCheck waits for Courier's check to reach state with a message
// containing msg, and returns the Workload.
func expectCheck(ctx context.Context, wl *kueue.Workload, state kueue.CheckState, msg string) *kueue.Workload {
	var got *kueue.Workload
	EventuallyWithOffset(1, func(g Gomega) {
		got = managerWorkload(ctx, g, wl)
		c := checkState(got)
		g.Expect(c.State).To(Equal(state), "check: %+v", c)
		g.Expect(c.Message).To(ContainSubstring(msg), "check: %+v", c)
	}).WithTimeout(time.Minute).Should(Succeed())
	return got
}

// remoteWorkload reads the Workload's copy on a worker; nil if absent.
func remoteWorkload(ctx context.Context, g Gomega, worker *framework.Cluster, wl *kueue.Workload) *kueue.Workload {
	got := &kueue.Workload{}
	err := worker.Client.Get(ctx, client.ObjectKeyFromObject(wl), got)
	if client.IgnoreNotFound(err) != nil {
		g.Expect(err).NotTo(HaveOccurred())
	}
	if err != nil {
		return nil
	}
	return got
}

// remoteTrainJob reads the TrainJob on a worker; nil if absent.
func remoteTrainJob(ctx context.Context, g Gomega, worker *framework.Cluster, tj *trainer.TrainJob) *trainer.TrainJob {
	got := &trainer.TrainJob{}
	err := worker.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)
	if client.IgnoreNotFound(err) != nil {
		g.Expect(err).NotTo(HaveOccurred())
	}
	if err != nil {
		return nil
	}
	return got
}
