package expect

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/pkg/adapter"
)

// Remnant records a job copy deleted in the background whose runner may
// outlive it: on a worker whose controllers are down, the runner and its
// pods go on after the copy is gone. A copy noted already keeps its time.
func (e *Expectations) Remnant(key RemnantKey, r Remnant, now time.Time) {
	if old, _, ok := e.remnants.get(key, now); ok && old.Owner == r.Owner {
		return
	}
	e.remnants.put(key, r, now)
}

// RemnantOf returns the remnant under key, if Courier still waits for it.
func (e *Expectations) RemnantOf(key RemnantKey, now time.Time) (Remnant, bool) {
	r, _, ok := e.remnants.get(key, now)
	return r, ok
}

// RemnantGone forgets the remnant under key, if it is still the one of
// owner: it went, or was made for another copy since.
func (e *Expectations) RemnantGone(key RemnantKey, owner types.UID) {
	e.remnants.remove(key, func(r Remnant) bool { return r.Owner != owner })
}

// NewRemnant is the remnant a job copy on cluster that is being deleted,
// or that Courier deletes, may leave: the dependent that runs its pods
// (see adapter.Adapter.Runner) and the pods themselves
// (adapter.Adapter.PodLabel), as far as its kind has them, when the copy
// had not finished. A finished copy's pods are done, and nothing of it is
// a reason to wait or to read the worker again.
func NewRemnant(cluster string, a adapter.Adapter, copy *unstructured.Unstructured) (RemnantNote, bool) {
	if copy.GetUID() == "" || a.Outcome(copy).Finished {
		return RemnantNote{}, false
	}
	return VanishedCopy(cluster, a, copy.GetNamespace(), copy.GetName(), copy.GetUID())
}

// VanishedCopy is the remnant of job copy ns/name on cluster, of UID owner
// ("" for a copy that went without Courier seeing it): its runner and its
// pods, as far as its kind has them. A runner counts only as the copy's by
// its controller's UID, so without one only the pods are waited for.
func VanishedCopy(cluster string, a adapter.Adapter, ns, name string, owner types.UID) (RemnantNote, bool) {
	runner, hasRunner := a.Runner()
	if owner == "" {
		runner, hasRunner = schema.GroupVersionKind{}, false
	}
	label := a.PodLabel()
	if !hasRunner && label == "" {
		return RemnantNote{}, false
	}
	return RemnantNote{
		Key:     RemnantKey{Cluster: cluster, Namespace: ns, Name: name},
		Remnant: Remnant{Owner: owner, Runner: runner, PodLabel: label},
	}, true
}
