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
//     retries. A configuration error (an expired token, an RBAC change, a
//     lost Secret) sets it too, but only on a worker that has been Active:
//     that worker may hold jobs nobody can see any more, and they follow
//     the lost-worker policy. A worker never Active holds none, and is left
//     to a person without moving anything (kueue#13238).
//   - KindsAvailable and unavailableKinds are known only while connected;
//     otherwise the last observation stands.
//   - capacity and capacitySummary are the state's Capacity, while
//     connected. Without one (not connected, or a change the reconciler
//     holds back), the last written stands.
func computeStatus(old courier.WorkerClusterStatus, generation int64, s cluster.State, now time.Time) courier.WorkerClusterStatus {
	st := *old.DeepCopy()
	st.ObservedGeneration = generation
	st.Credential = credentialStatus(old.Credential, s.Credential)
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
		if s.PreemptionGates != "" {
			st.PreemptionGates = s.PreemptionGates
		}
		if s.Capacity != nil {
			st.Capacity, st.CapacitySummary = s.Capacity.Resources, s.Capacity.Summary
		}
		meta.SetStatusCondition(&st.Conditions, kindsCondition(s.UnavailableKinds, generation, at))
	case s.Err != nil:
		active.Status, active.Reason, active.Message = metav1.ConditionFalse, s.Err.Reason, s.Err.Message
		if st.DisconnectedSince == nil && (!s.Err.IsConfiguration() || beenActive(old)) {
			st.DisconnectedSince = &since
		}
		st.ConnectedSince = nil
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

// beenActive reports whether the worker has ever been Active: its version
// is recorded on the first connection and kept, through restarts of
// Courier too, which show it Connecting for a moment.
func beenActive(s courier.WorkerClusterStatus) bool {
	return s.KubernetesVersion != "" || wasActive(s)
}

func wasActive(s courier.WorkerClusterStatus) bool {
	return meta.IsStatusConditionTrue(s.Conditions, courier.WorkerClusterActive)
}
