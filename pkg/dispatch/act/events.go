package act

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/plan"
)

// backInReach names the first of clusters that is connected now, or "".
func (a *Actor) backInReach(clusters []string) string {
	for _, c := range clusters {
		if _, err := a.Remotes.Get(c); err == nil {
			return c
		}
	}
	return ""
}

func (a *Actor) record(wl *kueue.Workload, events []plan.Event) {
	for _, e := range events {
		var related runtime.Object
		if e.Cluster != "" {
			related = &courier.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: e.Cluster}}
		}
		a.Recorder.Eventf(wl, related, e.Type, e.Reason, "Dispatch", "%s", e.Message)
	}
}

// withRemoval reports removed copies: in the Dispatched event when there is
// one, since losing copies go as the job is dispatched, and otherwise in
// an event of their own. Events are writes to the manager, one per step.
func withRemoval(events []plan.Event, msg string) []plan.Event {
	for i := range events {
		if events[i].Reason == courier.EventDispatched {
			events[i].Message += " " + msg
			return events
		}
	}
	return append(events, plan.Event{Type: "Normal", Reason: courier.EventRemoteDeleted, Message: msg})
}

// isStale tells a write refused because Courier's view was out of date (a
// conflict, or a JSON patch whose test no longer holds), which the next
// plan, on fresh state, resolves.
func isStale(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	// The API server answers a JSON patch whose test fails with a bare
	// 422 that names no object and no cause; a validation or admission
	// policy names the object it refused.
	d := status.Status().Details
	return d == nil || (d.Kind == "" && d.Name == "" && len(d.Causes) == 0)
}

// isRefusal tells a write the worker refused as it is (its admission
// webhooks or policies, its RBAC), which retrying at once will not change.
func isRefusal(err error) bool {
	return !isStale(err) && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err))
}
