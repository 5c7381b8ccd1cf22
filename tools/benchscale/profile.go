package benchscale

import (
	"context"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/courierdev/courier/tools/profiles"
)

// cpuProfileLength is the length of the CPU profile taken while the
// backlog drains.
const cpuProfileLength = 20 * time.Second

// captureProfiles saves into dir a CPU profile of Courier from now on and,
// once halfway is closed, a heap profile, through its pprof server at
// addr. It returns the files' paths.
func captureProfiles(ctx context.Context, addr, dir string, halfway <-chan struct{}) ([]string, error) {
	cpu, heap := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "heap.pprof")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return profiles.Fetch(gctx, profiles.CPUURL(addr, cpuProfileLength), cpu)
	})
	g.Go(func() error {
		select {
		case <-halfway:
		case <-gctx.Done():
			return gctx.Err()
		}
		return profiles.Fetch(gctx, profiles.HeapURL(addr), heap)
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return []string{cpu, heap}, nil
}
