package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is one event on the job or its Workload, on the manager.
type Event struct {
	Object  string      `json:"object"`
	Type    string      `json:"type"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count,omitempty"`
	Last    metav1.Time `json:"lastSeen"`
}

// managerSide names the manager in events.
const managerSide = "manager"

// objectKey is an object events are listed for.
type objectKey struct{ kind, namespace, name string }

// listEvents returns the last n events on the objects, oldest first. A
// cluster where the reader may not list events gives a note instead.
func listEvents(ctx context.Context, c client.Client, side string, objs []objectKey, n int) ([]Event, string, error) {
	var all []corev1.Event
	for _, o := range objs {
		list := &corev1.EventList{}
		sel := fields.Set{"involvedObject.kind": o.kind, "involvedObject.name": o.name}.AsSelector()
		err := c.List(ctx, list, client.InNamespace(o.namespace), client.MatchingFieldsSelector{Selector: sel})
		if apierrors.IsForbidden(err) {
			return nil, fmt.Sprintf("the identity used on %s may not list events in %s; grant it get and list on events to see them here (docs/kubectl-courier.md)", side, o.namespace), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("listing events on %s: %w", side, err)
		}
		all = append(all, list.Items...)
	}
	return lastEvents(all, n), "", nil
}

// lastEvents turns events into Events and keeps the last n, oldest first.
func lastEvents(events []corev1.Event, n int) []Event {
	out := make([]Event, 0, len(events))
	for i := range events {
		e := &events[i]
		out = append(out, Event{
			Object:  e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name,
			Type:    e.Type,
			Reason:  e.Reason,
			Message: e.Message,
			Count:   e.Count,
			Last:    metav1.NewTime(lastSeen(e)),
		})
	}
	slices.SortStableFunc(out, func(a, b Event) int {
		return cmp.Or(a.Last.Compare(b.Last.Time), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Reason, b.Reason))
	})
	if n >= 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// lastSeen is when an event last happened, whichever API wrote it: core
// events set lastTimestamp, events.k8s.io ones eventTime and, when
// repeated, series.lastObservedTime.
func lastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}
