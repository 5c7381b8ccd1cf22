package cluster

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHeaderTimeout(t *testing.T) {
	const limit = 200 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/hung", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	// A watch: headers at once, then a body that streams past the limit.
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(2 * limit)
		_, _ = io.WriteString(w, "event")
	})
	server := httptest.NewServer(mux)
	defer server.Close()
	client := &http.Client{Transport: headerTimeout(limit)(http.DefaultTransport)}

	cases := map[string]struct {
		path         string
		wantDeadline bool
		wantBody     string
	}{
		"a server that never answers times out":               {path: "/hung", wantDeadline: true},
		"a stream may outlast the limit once headers arrived": {path: "/stream", wantBody: "event"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := client.Get(server.URL + tc.path)
			if tc.wantDeadline {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Get() error = %v, want a deadline error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get() error = %v", err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			if err != nil || string(body) != tc.wantBody {
				t.Fatalf("body = %q, %v; want %q", body, err, tc.wantBody)
			}
		})
	}
}
