package expect

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// inForce reports whether the note still holds at now: up to and
// including Until.
func (n Note) inForce(now time.Time) bool { return !now.After(n.Until) }

// PassOver passes worker cluster over for Workload wl until until: a
// create there failed for a reason a person must fix (a same-name object
// Courier does not own, a missing namespace, the worker's refusal) or for
// a fault of the worker's own.
func (e *Expectations) PassOver(wl types.UID, cluster string, n Note, now time.Time) {
	e.passedOver.update(wl, now, now.Add(maxPassOver), func(notes map[string]Note, ok bool) map[string]Note {
		notes = maps.Clone(notes)
		if notes == nil {
			notes = map[string]Note{}
		}
		notes[cluster] = n
		return notes
	})
}

// PassedOver returns the notes in force for Workload wl, by worker.
func (e *Expectations) PassedOver(wl types.UID, now time.Time) map[string]Note {
	notes, _, _ := e.passedOver.get(wl, now)
	var out map[string]Note
	for cluster, n := range notes {
		if n.inForce(now) {
			if out == nil {
				out = map[string]Note{}
			}
			out[cluster] = n
		}
	}
	return out
}

// Failing passes a worker over for every job of a namespace until n.Until:
// a create there failed with a server error of the worker's own (its
// Kueue's webhook down, say). A namespace, not the whole worker: a webhook
// may fail for some namespaces only.
func (e *Expectations) Failing(key NamespaceKey, n Note, now time.Time) {
	e.failing.putUntil(key, n, now, n.Until)
}

// FailingNote returns the note in force for key, if any.
func (e *Expectations) FailingNote(key NamespaceKey, now time.Time) (Note, bool) {
	n, _, ok := e.failing.get(key, now)
	return n, ok
}

// Recovered ends the failing note of key: a create there went through.
func (e *Expectations) Recovered(key NamespaceKey) { e.failing.remove(key, nil) }
