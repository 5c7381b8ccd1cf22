package dispatch

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
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
		return !okOld || !okCur || workloadMatters(old, cur, specOrMetaChangedButFinalizers, managerUnread) ||
			awaited.Behind(cur.UID, old.ResourceVersion, now())
	}}
}

// copyChangeMatters reports whether a worker's change can change a plan:
// every creation and deletion and every resync; of a Workload copy, the
// updates but those that changed only what copyMetaChanged is blind to and
// the conditions of copyUnread; of a job copy of a kind Courier carries,
// the updates but those that changed only parts of its spec no plan reads
// (see adapter.SpecChanged). The worker's Kueue writes both kinds of
// update as it starts a job copy, each a pass that found nothing to do.
func copyChangeMatters(old, cur client.Object, adapters map[schema.GroupKind]adapter.Adapter) bool {
	if old == nil || old.GetResourceVersion() == cur.GetResourceVersion() {
		return true
	}
	switch c := cur.(type) {
	case *kueue.Workload:
		o, ok := old.(*kueue.Workload)
		return !ok || workloadMatters(o, c, copyMetaChanged, copyUnread)
	case *unstructured.Unstructured:
		o, ok := old.(*unstructured.Unstructured)
		a, carried := adapters[c.GroupVersionKind().GroupKind()]
		return !ok || !carried || metaChanged(o, c) || finalizersChanged(o, c) ||
			!equality.Semantic.DeepEqual(o.Object["status"], c.Object["status"]) ||
			a.SpecChanged(o, c)
	}
	return true
}

// copyMetaChanged is specOrMetaChangedButFinalizers for a Workload copy,
// blind also to its owners and to labels not Courier's: the worker's Kueue
// sets both as it adopts the copy for the job copy, and a plan reads only
// Courier's labels of a copy.
func copyMetaChanged(old, cur client.Object) bool {
	return old.GetGeneration() != cur.GetGeneration() || deletionOrAnnotationsChanged(old, cur) ||
		!courierLabelsEqual(old.GetLabels(), cur.GetLabels())
}

// courierLabelsEqual reports whether a and b carry the same labels under
// Courier's prefix. It runs on every update of a Workload copy, so it
// compares in place rather than building the two sets.
func courierLabelsEqual(a, b map[string]string) bool {
	prefix := courier.GroupVersion.Group + "/"
	for k, v := range a {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	for k := range b {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if _, ok := a[k]; !ok {
			return false
		}
	}
	return true
}

// workloadMatters reports whether an update of a Workload changed what
// metaRead reports or its status but for the conditions of the types
// unread. A resync, which changes nothing, matters: it is the informers'
// periodic second look.
func workloadMatters(old, cur *kueue.Workload, metaRead func(old, cur client.Object) bool, unread []string) bool {
	if old.ResourceVersion == cur.ResourceVersion || metaRead(old, cur) {
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
