// Package profiles fetches Go profiles from a process's net/http/pprof
// server, for the benchmarks.
package profiles

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
)

// Server is a process's pprof server: the URL its /debug/pprof handlers
// hang off, and the client that reaches it. An API server serves pprof
// behind TLS and authentication, so its client carries both.
type Server struct {
	// Base is the server's URL without a path, https://127.0.0.1:6443 say.
	Base string
	// Client reaches Base; nil for a plain HTTP client.
	Client *http.Client
}

// PlainServer is the plain HTTP pprof server at addr (host:port).
func PlainServer(addr string) Server {
	return Server{Base: "http://" + addr}
}

// RequestTimeout is a profile request's time limit: a CPU profile's
// request lasts as long as the profile (up to a minute).
const RequestTimeout = 90 * time.Second

// Fetch writes the profile at url, on a plain HTTP server, to path.
func Fetch(ctx context.Context, url, path string) error {
	return fetch(ctx, &http.Client{Timeout: RequestTimeout}, url, path)
}

// fetch writes the profile at url to path. A pprof server starts with its
// process's manager, a moment after /healthz: a refused connection is
// retried for a few seconds.
func fetch(ctx context.Context, client *http.Client, url, path string) error {
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

// CPUURL is the URL of a CPU profile of the given length from the pprof
// server at addr.
func CPUURL(addr string, d time.Duration) string {
	return cpuURL("http://"+addr, d)
}

func cpuURL(base string, d time.Duration) string {
	return fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(d.Seconds()))
}

// HeapURL is the URL of a heap profile, taken after a GC so that it shows
// what is live now rather than at the last GC.
func HeapURL(addr string) string {
	return fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", addr)
}

// CPUSlices saves CPU profiles of slice length, one after another, as
// dir/prefix-NN.pprof, until stop is closed; the slice running then is
// finished and kept. It returns the files' paths. A window of unknown
// length is covered this way because a CPU profile's length is fixed when
// it starts; `go tool pprof` merges the slices when given them all.
func CPUSlices(ctx context.Context, srv Server, dir, prefix string, slice time.Duration, stop <-chan struct{}) ([]string, error) {
	client := srv.Client
	if client == nil {
		client = &http.Client{Timeout: RequestTimeout}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var paths []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return paths, nil
		default:
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%02d.pprof", prefix, i))
		if err := fetch(ctx, client, cpuURL(srv.Base, slice), path); err != nil {
			return paths, err
		}
		paths = append(paths, path)
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
