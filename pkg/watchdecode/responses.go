package watchdecode

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// ResponsesWithoutManagedFields wraps a client's transport so that the
// objects the API server returns for writes (a create, an update, a patch,
// a delete) come without their metadata.managedFields, for a client whose
// cached objects carry none (NewCacheWithoutManagedFields): each write's
// response is a whole object, and its managed fields are about half its
// bytes, decoded for nothing. Reads (GET, so lists and watches too) pass
// through untouched, as does any response other than a successful JSON
// object. Use it with rest.Config.Wrap.
func ResponsesWithoutManagedFields(next http.RoundTripper) http.RoundTripper {
	return writeResponses{next: next}
}

type writeResponses struct{ next http.RoundTripper }

func (t writeResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet || req.Method == http.MethodHead ||
		resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	if mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mediaType != runtime.ContentTypeJSON {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the response to %s %s: %w", req.Method, req.URL.Path, err)
	}
	if trimmed, ok := withoutManagedFields(body); ok {
		body = trimmed
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// WrappedRoundTripper lets callers that wrap transports see the one beneath.
func (t writeResponses) WrappedRoundTripper() http.RoundTripper { return t.next }
