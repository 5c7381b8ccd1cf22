package profiles

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCPUSlices serves profiles and checks that slices are taken one after
// another until stop, the one under way finished and kept.
func TestCPUSlices(t *testing.T) {
	var served atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/profile" || r.URL.Query().Get("seconds") != "1" {
			http.NotFound(w, r)
			return
		}
		if served.Add(1) == 2 {
			close(stop) // Stop while the second slice is under way.
		}
		_, _ = w.Write([]byte("profile " + r.URL.RawQuery))
	}))
	defer srv.Close()
	dir := t.TempDir()
	paths, err := CPUSlices(context.Background(), PlainServer(strings.TrimPrefix(srv.URL, "http://")), dir, "burst", time.Second, stop)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "burst-00.pprof"), filepath.Join(dir, "burst-01.pprof")}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "profile seconds=1" {
			t.Errorf("%s holds %q", p, data)
		}
	}
}

// TestCPUSlicesThroughItsClient profiles a server behind TLS, as an API
// server is, through the client the Server carries: a plain client does not
// trust its certificate.
func TestCPUSlicesThroughItsClient(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(stop)
		_, _ = w.Write([]byte("profile " + r.URL.RawQuery))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if _, err := CPUSlices(context.Background(), Server{Base: srv.URL}, dir, "plain", time.Second, make(chan struct{})); err == nil {
		t.Fatal("CPUSlices() with a plain client trusted the test server's certificate")
	}
	paths, err := CPUSlices(context.Background(), Server{Base: srv.URL, Client: srv.Client()}, dir, "tls", time.Second, stop)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "tls-00.pprof")}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

func TestFetchReportsAnErrorStatus(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	err := Fetch(context.Background(), srv.URL+"/debug/pprof/heap", filepath.Join(t.TempDir(), "heap.pprof"))
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch() = %v, want an error naming the 404", err)
	}
}
