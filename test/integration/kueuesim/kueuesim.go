// Package kueuesim plays Kueue's part in integration tests, which run no
// Kueue: on the manager it creates a job's Workload, reserves quota, and
// evicts and requeues on Retry; on the workers it admits, evicts and
// finishes Courier's copies.
package kueuesim

import (
	"context"
	"strings"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
	"github.com/courierdev/courier/test/integration/framework"
)

// Sim acts for Kueue on one environment, for one Courier admission check.
type Sim struct {
	Env   *framework.Environment
	Check kueue.AdmissionCheckReference
}

// WorkloadName is the name Kueue gives a job's Workload.
func WorkloadName(job client.Object) string {
	return strings.ToLower(job.GetObjectKind().GroupVersionKind().Kind) + "-" + job.GetName()
}

// Submit creates the job on the manager and, as Kueue would, its Workload
// with Courier's check Pending and quota reserved in ClusterQueue "cq". The
// job must have its TypeMeta set.
func (s *Sim) Submit(ctx context.Context, job client.Object) *kueue.Workload {
	return s.SubmitTo(ctx, job, "cq")
}

// SubmitTo is Submit into a given ClusterQueue, which runs otherChecks
// besides Courier's.
func (s *Sim) SubmitTo(ctx context.Context, job client.Object, cq string, otherChecks ...string) *kueue.Workload {
	gvk := job.GetObjectKind().GroupVersionKind()
	gomega.ExpectWithOffset(1, gvk.Kind).NotTo(gomega.BeEmpty(), "the job needs its TypeMeta")
	name := WorkloadName(job)
	gomega.ExpectWithOffset(1, s.Env.Manager.Client.Create(ctx, job)).To(gomega.Succeed())
	wl := kueuetesting.MakeWorkload(name, job.GetNamespace()).Queue("lq").
		Owner(gvk.GroupVersion().String(), gvk.Kind, job.GetName(), string(job.GetUID())).Obj()
	gomega.ExpectWithOffset(1, s.Env.Manager.Client.Create(ctx, wl)).To(gomega.Succeed())
	s.ReserveQuotaIn(ctx, wl, cq, otherChecks...)
	return wl
}

// ReserveQuota admits the manager Workload into ClusterQueue "cq" with
// Courier's check Pending, as Kueue does after (re)queueing.
func (s *Sim) ReserveQuota(ctx context.Context, wl *kueue.Workload) {
	s.ReserveQuotaIn(ctx, wl, "cq")
}

// ReserveQuotaIn is ReserveQuota in a given ClusterQueue. Other admission
// checks the ClusterQueue runs are added Pending, as Kueue adds them.
func (s *Sim) ReserveQuotaIn(ctx context.Context, wl *kueue.Workload, cq string, otherChecks ...string) {
	UpdateStatus(ctx, s.Env.Manager, wl, func(w *kueue.Workload) {
		for _, name := range otherChecks {
			if findCheck(w, kueue.AdmissionCheckReference(name)) == nil {
				w.Status.AdmissionChecks = append(w.Status.AdmissionChecks, kueue.AdmissionCheckState{
					Name: kueue.AdmissionCheckReference(name), State: kueue.CheckStatePending, LastTransitionTime: metav1.Now(),
				})
			}
		}
		reserved := kueuetesting.MakeWorkload(w.Name, w.Namespace).ReserveQuota(cq).Obj()
		w.Status.Admission = reserved.Status.Admission
		meta.SetStatusCondition(&w.Status.Conditions, reserved.Status.Conditions[0])
		meta.RemoveStatusCondition(&w.Status.Conditions, kueue.WorkloadEvicted)
		s.SetCheck(w, kueue.CheckStatePending, "")
	})
}

// EvictAndRequeue does what the manager's Kueue does when a check turns
// Retry: evict (clearing the placement, resetting the check and counting
// the eviction), then release the quota.
func (s *Sim) EvictAndRequeue(ctx context.Context, wl *kueue.Workload) {
	UpdateStatus(ctx, s.Env.Manager, wl, func(w *kueue.Workload) {
		countEviction(w, "AdmissionCheck")
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue,
			Reason: "AdmissionCheck", Message: "Evicted due to AdmissionCheck in Retry state"})
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse,
			Reason: "Pending", Message: "Requeued"})
		w.Status.Admission = nil
		w.Status.ClusterName = nil
		w.Status.NominatedClusterNames = nil
		s.SetCheck(w, kueue.CheckStatePending, "Reset to Pending after eviction.")
	})
}

// countEviction adds one to the Workload's evictions for a reason, as
// Kueue does in the same write as the eviction.
func countEviction(w *kueue.Workload, reason string) {
	if w.Status.SchedulingStats == nil {
		w.Status.SchedulingStats = &kueue.SchedulingStats{}
	}
	for i := range w.Status.SchedulingStats.Evictions {
		if e := &w.Status.SchedulingStats.Evictions[i]; e.Reason == reason {
			e.Count++
			return
		}
	}
	w.Status.SchedulingStats.Evictions = append(w.Status.SchedulingStats.Evictions, kueue.WorkloadSchedulingStatsEviction{Reason: reason, Count: 1})
}

// SetCheck sets Courier's check on a Workload being updated.
func (s *Sim) SetCheck(w *kueue.Workload, state kueue.CheckState, msg string) {
	SetCheck(w, s.Check, state, msg)
}

// SetCheck sets an admission check on a Workload being updated.
func SetCheck(w *kueue.Workload, name kueue.AdmissionCheckReference, state kueue.CheckState, msg string) {
	if c := findCheck(w, name); c != nil {
		c.State, c.Message = state, msg
		return
	}
	w.Status.AdmissionChecks = append(w.Status.AdmissionChecks, kueue.AdmissionCheckState{
		Name: name, State: state, Message: msg, LastTransitionTime: metav1.Now(),
	})
}

func findCheck(w *kueue.Workload, name kueue.AdmissionCheckReference) *kueue.AdmissionCheckState {
	for i := range w.Status.AdmissionChecks {
		if w.Status.AdmissionChecks[i].Name == name {
			return &w.Status.AdmissionChecks[i]
		}
	}
	return nil
}

// AdmitOn admits the Workload's copy on a worker, as its Kueue would.
func AdmitOn(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload) {
	UpdateStatus(ctx, worker, wl, func(w *kueue.Workload) {
		reserved := kueuetesting.MakeWorkload(w.Name, w.Namespace).ReserveQuota("worker-cq").Admit(time.Now()).Obj()
		w.Status.Admission = reserved.Status.Admission
		for _, c := range reserved.Status.Conditions {
			meta.SetStatusCondition(&w.Status.Conditions, c)
		}
	})
}

// SetRemoteCondition sets a condition on the Workload's copy on a worker.
func SetRemoteCondition(ctx context.Context, worker *framework.Cluster, wl *kueue.Workload, cond metav1.Condition) {
	UpdateStatus(ctx, worker, wl, func(w *kueue.Workload) {
		meta.SetStatusCondition(&w.Status.Conditions, cond)
	})
}

// UpdateStatus changes a Workload's status on a cluster, retrying on
// conflicts.
func UpdateStatus(ctx context.Context, c *framework.Cluster, wl *kueue.Workload, mutate func(*kueue.Workload)) {
	gomega.EventuallyWithOffset(2, func(g gomega.Gomega) {
		w := &kueue.Workload{}
		g.Expect(c.Client.Get(ctx, client.ObjectKeyFromObject(wl), w)).To(gomega.Succeed())
		mutate(w)
		g.Expect(c.Client.Status().Update(ctx, w)).To(gomega.Succeed())
	}).Should(gomega.Succeed())
}

// ManagerWorkload reads the manager Workload.
func (s *Sim) ManagerWorkload(ctx context.Context, g gomega.Gomega, wl *kueue.Workload) *kueue.Workload {
	got := &kueue.Workload{}
	g.Expect(s.Env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wl), got)).To(gomega.Succeed())
	return got
}

// CheckState returns Courier's check on a Workload.
func (s *Sim) CheckState(w *kueue.Workload) kueue.AdmissionCheckState {
	for _, c := range w.Status.AdmissionChecks {
		if c.Name == s.Check {
			return c
		}
	}
	return kueue.AdmissionCheckState{}
}

// ExpectCheck waits for Courier's check to reach state with a message
// containing msg, and returns the Workload.
func (s *Sim) ExpectCheck(ctx context.Context, wl *kueue.Workload, state kueue.CheckState, msg string) *kueue.Workload {
	var got *kueue.Workload
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		got = s.ManagerWorkload(ctx, g, wl)
		c := s.CheckState(got)
		g.Expect(c.State).To(gomega.Equal(state), "check: %+v", c)
		g.Expect(c.Message).To(gomega.ContainSubstring(msg), "check: %+v", c)
	}).WithTimeout(time.Minute).Should(gomega.Succeed())
	return got
}

// Read returns the object of obj's key and kind on a cluster, or nil if
// there is none.
func Read[T client.Object](ctx context.Context, g gomega.Gomega, c *framework.Cluster, obj T) T {
	got := obj.DeepCopyObject().(T)
	err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)
	if client.IgnoreNotFound(err) != nil {
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	if err != nil {
		var none T
		return none
	}
	return got
}
