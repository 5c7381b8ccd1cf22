package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
)

// samePriority reports whether a Workload copy has the manager Workload's
// priority.
func samePriority(wl, copy *kueue.Workload) bool {
	return equality.Semantic.DeepEqual(wl.Spec.Priority, copy.Spec.Priority) &&
		equality.Semantic.DeepEqual(wl.Spec.PriorityClassRef, copy.Spec.PriorityClassRef)
}

// refusalEvents are the events that report what a Forwarding leaves.
func refusalEvents(c string, f *adapter.Forwarding) []Event {
	var out []Event
	for _, r := range f.Refused {
		reason, msg := courier.EventNotForwarded, fmt.Sprintf("Not forwarded to worker %q: %s", c, r.Message())
		if r.Edited {
			reason, msg = courier.EventRemoteEdited, fmt.Sprintf("The copy on worker %q has %s", c, r.Message())
		}
		out = append(out, Event{Type: "Warning", Reason: reason, Message: truncate(msg, maxNoteLength)})
	}
	return out
}
