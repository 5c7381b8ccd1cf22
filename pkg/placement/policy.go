package placement

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Compile applies the spec's defaults and compiles its filter and score
// (nil Programs when the spec has none). When both fail, the error names
// both, so that the policy's Valid condition tells the whole story.
func Compile(spec courier.DispatchPolicySpec) (Policy, error) {
	s := spec.WithDefaults()
	p := Policy{
		Strategy:     s.Strategy,
		FanOut:       int(*s.FanOut),
		StepSize:     int(*s.StepSize),
		RoundTimeout: s.RoundTimeout.Duration,
		MaxMoves:     int(*s.MaxMoves),

		OnMovesExhausted: s.OnMovesExhausted,
	}
	if s.MaxWaitTime != nil {
		p.MaxWaitTime = s.MaxWaitTime.Duration
	}
	var errs []error
	if s.Filter != "" {
		prg, err := CompileFilter(s.Filter)
		if err != nil {
			errs = append(errs, err)
		}
		p.Filter = prg
	}
	if s.Score != "" {
		prg, err := CompileScore(s.Score)
		if err != nil {
			errs = append(errs, err)
		}
		p.Score = prg
	}
	switch len(errs) {
	case 0:
		return p, nil
	case 1:
		return Policy{}, errs[0]
	}
	return Policy{}, fmt.Errorf("%w; %w", errs[0], errs[1])
}

// maxCacheEntries bounds the cache should policies be deleted without
// Forget; a real manager has a handful of policies.
const maxCacheEntries = 1024

// Cache keeps each DispatchPolicy's compiled Policy, or its compile error,
// so that CEL is compiled once per generation, not once per reconcile. It
// holds one entry per policy (its newest generation) and is safe for
// concurrent use. The zero Cache is ready to use.
type Cache struct {
	mu      sync.Mutex
	entries map[types.UID]cacheEntry
}

type cacheEntry struct {
	key    cacheKey
	policy Policy
	err    error
}

// cacheKey is what the compiled Policy depends on. The generation alone
// would do on an API server; the fields also guard against objects whose
// generation nobody maintains (fake clients in tests).
type cacheKey struct {
	generation             int64
	strategy               courier.DispatchStrategy
	fanOut, stepSize       int32
	roundTimeout, maxWait  time.Duration
	filter, score          string
	fanOutSet, stepSizeSet bool
	roundSet, maxWaitSet   bool
}

func keyOf(p *courier.DispatchPolicy) cacheKey {
	s := p.Spec
	k := cacheKey{generation: p.Generation, strategy: s.Strategy, filter: s.Filter, score: s.Score}
	if s.FanOut != nil {
		k.fanOut, k.fanOutSet = *s.FanOut, true
	}
	if s.StepSize != nil {
		k.stepSize, k.stepSizeSet = *s.StepSize, true
	}
	if s.RoundTimeout != nil {
		k.roundTimeout, k.roundSet = s.RoundTimeout.Duration, true
	}
	if s.MaxWaitTime != nil {
		k.maxWait, k.maxWaitSet = s.MaxWaitTime.Duration, true
	}
	return k
}

// Get returns the policy compiled, from the cache when this generation was
// compiled before. A compile error is cached too and returned on every Get
// of that generation.
func (c *Cache) Get(p *courier.DispatchPolicy) (Policy, error) {
	if p == nil {
		return Policy{}, errors.New("no DispatchPolicy")
	}
	key := keyOf(p)
	c.mu.Lock()
	e, ok := c.entries[p.UID]
	c.mu.Unlock()
	if ok && e.key == key {
		return e.policy, e.err
	}

	// Compile outside the lock: it takes a while, and two workers
	// compiling the same generation at once is only wasted work.
	policy, err := Compile(p.Spec)

	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[p.UID]; ok && old.key.generation > key.generation {
		return policy, err // a stale read: keep the newer entry
	}
	if c.entries == nil {
		c.entries = map[types.UID]cacheEntry{}
	}
	if _, ok := c.entries[p.UID]; !ok && len(c.entries) >= maxCacheEntries {
		for uid := range c.entries { // drop any one; it is compiled again if needed
			delete(c.entries, uid)
			break
		}
	}
	c.entries[p.UID] = cacheEntry{key: key, policy: policy, err: err}
	return policy, err
}

// Forget drops a deleted policy's entry.
func (c *Cache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, uid)
}
