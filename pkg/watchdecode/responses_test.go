package watchdecode

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResponsesWithoutManagedFields(t *testing.T) {
	const withFields = `{"kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"m"}]},"data":{"k":"v"}}`
	const without = `{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`
	cases := map[string]struct {
		method      string
		status      int
		contentType string
		body        string
		want        string
	}{
		"a patch":                   {method: http.MethodPatch, status: 200, contentType: "application/json", body: withFields, want: without},
		"a create":                  {method: http.MethodPost, status: 201, contentType: "application/json", body: withFields, want: without},
		"an update, with a charset": {method: http.MethodPut, status: 200, contentType: "application/json; charset=utf-8", body: withFields, want: without},
		"a delete that returns it":  {method: http.MethodDelete, status: 200, contentType: "application/json", body: withFields, want: without},
		"leading whitespace":        {method: http.MethodPatch, status: 200, contentType: "application/json", body: "\n " + withFields, want: "\n " + without},
		"a read is left alone":      {method: http.MethodGet, status: 200, contentType: "application/json", body: withFields, want: withFields},
		"an error is left alone":    {method: http.MethodPatch, status: 409, contentType: "application/json", body: withFields, want: withFields},
		"another content type":      {method: http.MethodPatch, status: 200, contentType: "application/vnd.kubernetes.protobuf", body: withFields, want: withFields},
		"no managed fields":         {method: http.MethodPatch, status: 200, contentType: "application/json", body: without, want: without},
		"not an object":             {method: http.MethodPost, status: 200, contentType: "application/json", body: `[1]`, want: `[1]`},
		"a truncated object":        {method: http.MethodPost, status: 200, contentType: "application/json", body: withFields[:40], want: withFields[:40]},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := &http.Client{Transport: ResponsesWithoutManagedFields(http.DefaultTransport)}
			req, err := http.NewRequest(tc.method, srv.URL+"/api/v1/namespaces/n/configmaps/a", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if resp.ContentLength >= 0 && resp.ContentLength != int64(len(got)) {
				t.Errorf("Content-Length %d for a body of %d bytes", resp.ContentLength, len(got))
			}
		})
	}
}
