package trainer

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// UID sets the UID.
func (w *TrainJobWrapper) UID(uid string) *TrainJobWrapper {
	w.TrainJob.UID = types.UID(uid)
	return w
}

// Condition sets a status condition.
func (w *TrainJobWrapper) Condition(t string, status metav1.ConditionStatus, reason string) *TrainJobWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: reason})
	return w
}

// JobsStatus sets the status of one replicated job: how many of its jobs
// are active and how many succeeded.
func (w *TrainJobWrapper) JobsStatus(name string, active, succeeded int32) *TrainJobWrapper {
	w.Status.JobsStatus = append(w.Status.JobsStatus, trainer.JobStatus{
		Name: name, Active: ptr.To(active), Succeeded: ptr.To(succeeded),
		Ready: ptr.To[int32](0), Failed: ptr.To[int32](0), Suspended: ptr.To[int32](0),
	})
	return w
}
