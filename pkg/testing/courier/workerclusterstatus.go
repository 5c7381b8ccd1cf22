package courier

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Condition sets a status condition.
func (w *WorkerClusterWrapper) Condition(t string, status metav1.ConditionStatus, reason, msg string) *WorkerClusterWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg})
	return w
}

// Active sets the Active condition, True with reason Connected.
func (w *WorkerClusterWrapper) Active() *WorkerClusterWrapper {
	return w.Condition(courier.WorkerClusterActive, metav1.ConditionTrue, courier.ReasonConnected, "Connected.")
}

// Capacity adds the quota of one resource of one flavor to the status, in
// quantities ("4", "16Gi").
func (w *WorkerClusterWrapper) Capacity(flavor, res, nominal, usage, pending string) *WorkerClusterWrapper {
	w.Status.Capacity = append(w.Status.Capacity, courier.ResourceCapacity{
		Flavor: flavor, Resource: res, Nominal: resource.MustParse(nominal), Usage: resource.MustParse(usage),
		Pending: ptr.To(resource.MustParse(pending)),
	})
	return w
}

// CapacitySummary sets status.capacitySummary.
func (w *WorkerClusterWrapper) CapacitySummary(s string) *WorkerClusterWrapper {
	w.Status.CapacitySummary = s
	return w
}

// UnavailableKinds sets the kinds the worker does not serve.
func (w *WorkerClusterWrapper) UnavailableKinds(kinds ...string) *WorkerClusterWrapper {
	w.Status.UnavailableKinds = kinds
	return w
}

// Deleting marks the WorkerCluster deleted at a time.
func (w *WorkerClusterWrapper) Deleting(at time.Time) *WorkerClusterWrapper {
	w.DeletionTimestamp = ptr.To(metav1.NewTime(at))
	return w
}
