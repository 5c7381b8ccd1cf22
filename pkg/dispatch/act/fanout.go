package act

import (
	"sync"
)

// onEach runs f for every cluster at once and returns the results in the
// clusters' order: each worker has its own connection and rate limits, so
// a pass that writes to several waits for the slowest, not for the sum.
func onEach[T any](clusters []string, f func(c string) T) []T {
	out := make([]T, len(clusters))
	if len(clusters) == 1 {
		out[0] = f(clusters[0])
		return out
	}
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Go(func() { out[i] = f(c) })
	}
	wg.Wait()
	return out
}
