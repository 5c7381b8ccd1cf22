package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// headerTimeout bounds the wait for response headers of every request,
// watches included, without bounding how long a watch may then stream. It
// is what stops a hung worker from holding a watch establishment or a list
// forever (kueue#11206).
func headerTimeout(d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			ctx, cancel := context.WithCancel(req.Context())
			timer := time.AfterFunc(d, cancel)
			resp, err := rt.RoundTrip(req.WithContext(ctx))
			if !timer.Stop() {
				if err == nil {
					_ = resp.Body.Close()
				}
				cancel()
				return nil, fmt.Errorf("%s %s: no response within %s: %w", req.Method, req.URL.Path, d, context.DeadlineExceeded)
			}
			if err != nil {
				cancel()
				return nil, err
			}
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
			return resp, nil
		})
	}
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
