// Package expect holds the dispatcher's expectations: what Courier did that
// its caches may not show yet, and what it learnt that no object records,
// in the manner of Kubernetes' ControllerExpectations. The observe step of
// a pass reads them, the act step writes them, and the planner never sees
// them: it decides on the facts observe derived from them.
//
// Each kind of expectation is a table whose entries expire (see table), so
// that one lost event, a Workload deleted behind Courier's back, or a
// worker that never answers again leaves nothing behind for longer than
// that kind's lifetime, and the memory Courier holds is bounded by its rate
// of writes, under any load. Sizes reports them, for the
// courier_dispatch_expectations gauge. Everything is kept in memory: after
// a restart the caches start from the clusters' current state, and what a
// pass needs to know again it finds out again.
package expect

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Lifetimes of the expectations: each far longer than an informer takes to
// show what it waits for, even after its watch broke and listed again.
const (
	// WrittenTTL: the versions of a manager object Courier wrote over.
	WrittenTTL = 5 * time.Minute
	// CreatedTTL: a copy Courier created counts as there, unseen, for this
	// long; CreatedKeep: past that, while the worker's informer has not
	// read up to its creation.
	CreatedTTL  = 30 * time.Second
	CreatedKeep = 5 * time.Minute
	// AssumedTTL: a created Workload copy counts as demand of its own on
	// its worker until the capacity snapshot shows it, or this long.
	AssumedTTL = 10 * time.Second
	// DeletedTTL: a remote object Courier deleted counts as gone.
	DeletedTTL = 2 * time.Minute
	// MirroredTTL: a finished job copy whose final status is on the
	// manager needs no final sync again.
	MirroredTTL = 2 * time.Minute
	// StatusMirrorTTL: when a running job's status was last mirrored; as
	// long as the longest statusMirrorDelay the configuration allows.
	StatusMirrorTTL = time.Minute
	// ForwardTTL: a write to a copy made or refused, and a refusal
	// reported, are not made or reported again.
	ForwardTTL = 10 * time.Minute
	// RemnantTTL: what ran a deleted job copy's pods is waited for.
	RemnantTTL = time.Hour
	// RoundsTTL: when a Workload was first seen nominated, for one
	// deleted while nominated that no pass ends.
	RoundsTTL = 24 * time.Hour
	// maxPassOver bounds how long a worker is passed over, for the sweeps.
	maxPassOver = 5 * time.Minute
)

// Expectations are the dispatcher's memory of its own actions. It is safe
// for concurrent use.
type Expectations struct {
	written    *table[types.UID, []string]
	created    *table[CopyKey, Created]
	deleted    *table[types.UID, struct{}]
	mirrored   *table[types.UID, struct{}]
	statusAt   *table[types.UID, struct{}]
	passedOver *table[types.UID, map[string]Note]
	failing    *table[NamespaceKey, Note]
	forwarded  *table[string, struct{}]
	reported   *table[string, struct{}]
	remnants   *table[RemnantKey, Remnant]
	rounds     *table[types.UID, struct{}]
	gates      *table[types.UID, struct{}]

	// assumed holds one table per worker: the planner asks for one
	// worker's assumed demand at a time.
	mu      sync.Mutex
	assumed map[string]*table[types.UID, Demand]
}

// New returns empty expectations.
func New() *Expectations {
	return &Expectations{
		written:    newTable[types.UID, []string](WrittenTTL, WrittenTTL),
		created:    newTable[CopyKey, Created](CreatedKeep, CreatedTTL),
		deleted:    newTable[types.UID, struct{}](DeletedTTL, DeletedTTL),
		mirrored:   newTable[types.UID, struct{}](MirroredTTL, MirroredTTL),
		statusAt:   newTable[types.UID, struct{}](StatusMirrorTTL, StatusMirrorTTL),
		passedOver: newTable[types.UID, map[string]Note](maxPassOver, maxPassOver),
		failing:    newTable[NamespaceKey, Note](maxPassOver, maxPassOver),
		forwarded:  newTable[string, struct{}](ForwardTTL, ForwardTTL),
		reported:   newTable[string, struct{}](ForwardTTL, ForwardTTL),
		remnants:   newTable[RemnantKey, Remnant](RemnantTTL, RemnantTTL),
		rounds:     newTable[types.UID, struct{}](RoundsTTL, RoundsTTL),
		gates:      newTable[types.UID, struct{}](GateTTL, GateTTL),
		assumed:    map[string]*table[types.UID, Demand]{},
	}
}

// Sizes are how many entries each kind of expectation holds, by kind.
func (e *Expectations) Sizes() map[string]int {
	sizes := map[string]int{
		"written":     e.written.len(),
		"created":     e.created.len(),
		"deleted":     e.deleted.len(),
		"mirrored":    e.mirrored.len(),
		"status_at":   e.statusAt.len(),
		"passed_over": e.passedOver.len(),
		"failing":     e.failing.len(),
		"forwarded":   e.forwarded.len(),
		"reported":    e.reported.len(),
		"remnants":    e.remnants.len(),
		"rounds":      e.rounds.len(),
		"gates":       e.gates.len(),
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.assumed {
		sizes["assumed"] += t.len()
	}
	return sizes
}

// ForgetWorkload drops what is kept for a manager Workload that finished:
// nothing of it is dispatched again.
func (e *Expectations) ForgetWorkload(wl types.UID) {
	e.passedOver.remove(wl, nil)
	e.rounds.remove(wl, nil)
}

// WroteOver records that the API server holds a version of the manager
// object uid newer than replaced: Courier wrote over it, or was refused
// writing on it for a conflict. One pass may write twice (the placement,
// then the status); the last maxReplaced versions are kept.
func (e *Expectations) WroteOver(uid types.UID, replaced string, now time.Time) {
	e.written.update(uid, now, now.Add(WrittenTTL), func(versions []string, _ bool) []string {
		versions = append(versions, replaced)
		if len(versions) > maxReplaced {
			versions = versions[len(versions)-maxReplaced:]
		}
		return versions
	})
}

// maxReplaced bounds the versions remembered per object.
const maxReplaced = 4

// Behind reports whether version of the manager object uid is one Courier
// wrote over lately: a pass on it would decide on old state.
func (e *Expectations) Behind(uid types.UID, version string, now time.Time) bool {
	versions, _, ok := e.written.get(uid, now)
	if !ok {
		return false
	}
	for _, v := range versions {
		if v == version {
			return true
		}
	}
	return false
}

// CaughtUp forgets Courier's writes to uid: the cache showed a version
// none of them replaced, which holds them all.
func (e *Expectations) CaughtUp(uid types.UID) { e.written.remove(uid, nil) }
