package workercluster

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

// computeStatus is the WorkerCluster status for what was observed. It is
// pure: the reconciler supplies the clock.
//
//   - Active is True when connected, False with the error's reason when a
//     connection failed, and Unknown while the first attempt is under way.
//   - disconnectedSince is set by the first network loss and kept through
//     retries; configuration errors neither set nor clear it, because they
//     call for a person, not for moving jobs away (kueue#13238).
//   - KindsAvailable and unavailableKinds are known only while connected;
//     otherwise the last observation stands.
func computeStatus(old courier.WorkerClusterStatus, generation int64, s cluster.State, now time.Time) courier.WorkerClusterStatus {
	st := *old.DeepCopy()
	st.ObservedGeneration = generation
	at := metav1.NewTime(now)
	since := metav1.NewTime(s.Since)
	if s.Since.IsZero() {
		since = at
	}
	active := metav1.Condition{Type: courier.WorkerClusterActive, ObservedGeneration: generation, LastTransitionTime: at}
	switch {
	case s.Connected:
		active.Status, active.Reason = metav1.ConditionTrue, courier.ReasonConnected
		active.Message = fmt.Sprintf("Connected to the worker's API server (Kubernetes %s).", s.KubernetesVersion)
		if st.ConnectedSince == nil || !wasActive(old) {
			st.ConnectedSince = &since
		}
		st.DisconnectedSince = nil
		st.KubernetesVersion = s.KubernetesVersion
		st.UnavailableKinds = s.UnavailableKinds
		meta.SetStatusCondition(&st.Conditions, kindsCondition(s.UnavailableKinds, generation, at))
	case s.Err != nil:
		active.Status, active.Reason, active.Message = metav1.ConditionFalse, s.Err.Reason, s.Err.Message
		st.ConnectedSince = nil
		if !s.Err.IsConfiguration() && st.DisconnectedSince == nil {
			st.DisconnectedSince = &since
		}
	default:
		active.Status, active.Reason = metav1.ConditionUnknown, courier.ReasonConnecting
		active.Message = "Connecting to the worker's API server."
		st.ConnectedSince = nil
	}
	meta.SetStatusCondition(&st.Conditions, active)
	return st
}

func kindsCondition(missing []string, generation int64, at metav1.Time) metav1.Condition {
	c := metav1.Condition{Type: courier.WorkerClusterKindsAvailable, ObservedGeneration: generation, LastTransitionTime: at}
	if len(missing) == 0 {
		c.Status, c.Reason = metav1.ConditionTrue, courier.ReasonAllKindsServed
		c.Message = "The worker serves every kind Courier dispatches."
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, courier.ReasonKindsMissing
	c.Message = fmt.Sprintf("The worker does not serve %s; jobs of these kinds go to other workers. Install their CRDs on the worker to use it for them.",
		strings.Join(missing, ", "))
	return c
}

func wasActive(s courier.WorkerClusterStatus) bool {
	return meta.IsStatusConditionTrue(s.Conditions, courier.WorkerClusterActive)
}
