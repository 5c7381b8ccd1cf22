package expect

import (
	"sync"
	"time"
)

// table is a map whose entries expire: the one TTL mechanism behind every
// expectation. An entry counts up to and including its expiry. Expired
// entries are dropped by a sweep that runs at most once per sweepEvery, on
// a write, so that a write costs O(1) amortised however many entries the
// table holds, and the table holds at most the writes of its longest
// lifetime plus one sweepEvery.
type table[K comparable, V any] struct {
	// ttl is an entry's lifetime when put gives none.
	ttl        time.Duration
	sweepEvery time.Duration

	mu    sync.Mutex
	m     map[K]entry[V]
	swept time.Time
}

type entry[V any] struct {
	v       V
	at      time.Time
	expires time.Time
}

func newTable[K comparable, V any](ttl, sweepEvery time.Duration) *table[K, V] {
	return &table[K, V]{ttl: ttl, sweepEvery: sweepEvery, m: map[K]entry[V]{}}
}

// put stores v under k from now for the table's ttl.
func (t *table[K, V]) put(k K, v V, now time.Time) {
	t.putUntil(k, v, now, now.Add(t.ttl))
}

// putUntil stores v under k from now until expires.
func (t *table[K, V]) putUntil(k K, v V, now, expires time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[k] = entry[V]{v: v, at: now, expires: expires}
	t.sweepLocked(now)
}

// update stores what f makes of the entry under k, if any, until expires.
func (t *table[K, V]) update(k K, now, expires time.Time, f func(v V, ok bool) V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[k]
	if ok && now.After(e.expires) {
		e, ok = entry[V]{}, false
	}
	t.m[k] = entry[V]{v: f(e.v, ok), at: now, expires: expires}
	t.sweepLocked(now)
}

// get returns the entry under k, and when it was stored, if it has not
// expired.
func (t *table[K, V]) get(k K, now time.Time) (V, time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[k]
	if !ok || now.After(e.expires) {
		var zero V
		return zero, time.Time{}, false
	}
	return e.v, e.at, true
}

// has reports whether an entry under k is in force.
func (t *table[K, V]) has(k K, now time.Time) bool {
	_, _, ok := t.get(k, now)
	return ok
}

// remove drops the entry under k, if keep does not hold for it; keep may
// be nil.
func (t *table[K, V]) remove(k K, keep func(V) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[k]; ok && (keep == nil || !keep(e.v)) {
		delete(t.m, k)
	}
}

// each calls f for every entry in force until f returns false.
func (t *table[K, V]) each(now time.Time, f func(k K, v V) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.m {
		if !now.After(e.expires) && !f(k, e.v) {
			return
		}
	}
}

// len is how many entries the table holds, expired ones not swept yet
// included: what it costs in memory.
func (t *table[K, V]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

func (t *table[K, V]) sweepLocked(now time.Time) {
	if now.Sub(t.swept) <= t.sweepEvery {
		return
	}
	t.swept = now
	for k, e := range t.m {
		if now.After(e.expires) {
			delete(t.m, k)
		}
	}
}
