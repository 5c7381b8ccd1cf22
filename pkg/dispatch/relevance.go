package dispatch

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/expect"
)

// Kueue writes a Workload about ten times in a job's life, and the
// worker's Kueue writes each copy five more. Some of those writes change
// nothing a plan reads; the pass each would queue finds nothing to do,
// and costs what a pass costs. These say which.
var (
	// managerUnread are the manager Workload's conditions no plan reads:
	// Admitted follows Courier's own Ready, and PodsReady follows the
	// status Courier mirrors onto the job.
	managerUnread = []string{kueue.WorkloadAdmitted, kueue.WorkloadPodsReady}
	// copyUnread are a Workload copy's: its Admitted is read (the first
	// copy admitted wins), its PodsReady is not.
	copyUnread = []string{kueue.WorkloadPodsReady}
)

// workloadChanged lets through the manager Workload updates a plan can act
// on: all but those that changed only its finalizers (Kueue's, released
// as the Workload finishes) and the conditions of managerUnread, unless a
// pass awaits the update: one on a version Courier wrote over.
func workloadChanged(awaited *expect.Expectations, now func() time.Time) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*kueue.Workload)
		cur, okCur := e.ObjectNew.(*kueue.Workload)
		// A pass that found the cache behind waits for the version after
		// old, whatever it changed.
		return !okOld || !okCur || workloadMatters(old, cur, managerUnread) || awaited.Behind(cur.UID, old.ResourceVersion, now())
	}}
}

// copyChangeMatters reports whether a worker's change can change a plan:
// every creation and deletion, and updates but those of a Workload copy
// that changed only its finalizers and the conditions of copyUnread.
func copyChangeMatters(old, cur client.Object) bool {
	o, okOld := old.(*kueue.Workload)
	c, okCur := cur.(*kueue.Workload)
	return !okOld || !okCur || workloadMatters(o, c, copyUnread)
}

// workloadMatters reports whether an update of a Workload changed more
// than its finalizers and the conditions of the types unread. A resync,
// which changes nothing, matters: it is the informers' periodic second
// look.
func workloadMatters(old, cur *kueue.Workload, unread []string) bool {
	if old.ResourceVersion == cur.ResourceVersion || specOrMetaChangedButFinalizers(old, cur) {
		return true
	}
	before, after := old.Status, cur.Status
	before.Conditions = withoutTypes(before.Conditions, unread)
	after.Conditions = withoutTypes(after.Conditions, unread)
	return !equality.Semantic.DeepEqual(before, after)
}

// withoutTypes returns the conditions but those of the types given, in a
// new slice when it drops any.
func withoutTypes(conds []metav1.Condition, types []string) []metav1.Condition {
	if !slices.ContainsFunc(conds, func(c metav1.Condition) bool { return slices.Contains(types, c.Type) }) {
		return conds
	}
	return slices.DeleteFunc(slices.Clone(conds), func(c metav1.Condition) bool { return slices.Contains(types, c.Type) })
}

// finishedOnManager reports whether the manager Workload is finished. A
// copy gone after that changes no plan: a finished Workload's plan removes
// the copies there are and mirrors the final status from the placed job
// copy if it is there, and one gone leaves only less to do. Such deletions
// (the copies Courier removed as the job finished, and their Workload
// copies after them) were two passes per job that found nothing to do.
func (r *Reconciler) finishedOnManager(namespace, name string) bool {
	wl := &kueue.Workload{}
	err := r.client.Get(r.running, types.NamespacedName{Namespace: namespace, Name: name}, wl)
	return err == nil && meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
}
