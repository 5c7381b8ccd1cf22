package benchscale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// cpuProfileSeconds is the length of the CPU profile taken while the
// backlog drains.
const cpuProfileSeconds = 20

// captureProfiles saves into dir a CPU profile of Courier from now on and,
// once halfway is closed, a heap profile, through its pprof server at
// addr. It returns the files' paths. The heap profile runs a GC first, so
// that it shows what is live then rather than at the last GC.
func captureProfiles(ctx context.Context, addr, dir string, halfway <-chan struct{}) ([]string, error) {
	cpu, heap := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "heap.pprof")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return fetchProfile(gctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, cpuProfileSeconds), cpu)
	})
	g.Go(func() error {
		select {
		case <-halfway:
		case <-gctx.Done():
			return gctx.Err()
		}
		return fetchProfile(gctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", addr), heap)
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return []string{cpu, heap}, nil
}

// fetchProfile writes the profile at url to path. The pprof server starts
// with Courier's manager, a moment after /healthz: a refused connection is
// retried for a few seconds.
func fetchProfile(ctx context.Context, url, path string) error {
	client := &http.Client{Timeout: (cpuProfileSeconds + 30) * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fetchOnce(ctx, client, url, path)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("fetching profile %s: %w", url, ctx.Err())
		}
	}
}

func fetchOnce(ctx context.Context, client *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("fetching profile %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching profile %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching profile %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("saving profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("saving profile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving profile %s: %w", path, err)
	}
	return nil
}
