package watchdecode

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TestWrappedWatch runs a ListerWatcher built as controller-runtime builds an
// unstructured one, over an HTTP server that replays recorded responses, with
// and without Install, and checks that both watches see the same events, the
// same errors and the same requests.
func TestWrappedWatch(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	stream := event(t, watch.Added, trainJob("t1", "1")) + event(t, watch.Bookmark, bookmark(trainJobGVK, "2")) + event(t, watch.Error, status410())
	cases := map[string]struct {
		status      int
		contentType string
		body        string
		wantHandoff bool
	}{
		"JSON watch":       {status: http.StatusOK, contentType: "application/json", body: stream, wantHandoff: true},
		"JSON with params": {status: http.StatusOK, contentType: "application/json; charset=utf-8", body: stream, wantHandoff: true},
		"error status": {
			status: http.StatusGone, contentType: "application/json",
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`,
		},
		"forbidden": {
			status: http.StatusForbidden, contentType: "application/json",
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"trainjobs is forbidden","reason":"Forbidden","code":403}`,
		},
		"other content type": {status: http.StatusOK, contentType: "application/yaml", body: "x: 1\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var requests []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests = append(requests, r.Method+" "+r.URL.String()+" accept="+r.Header.Get("Accept"))
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL}
			run := func(install bool) ([]watch.Event, error, bool) {
				opts := cache.Options{}
				var i *informers
				if install {
					if err := Install(cfg, &opts); err != nil {
						t.Fatal(err)
					}
					i = newInformers(cfg, opts.Scheme)
				} else {
					hc, err := rest.HTTPClientFor(cfg)
					if err != nil {
						t.Fatal(err)
					}
					opts.HTTPClient = hc
				}
				dc, err := dynamic.NewForConfigAndClient(cfg, opts.HTTPClient)
				if err != nil {
					t.Fatal(err)
				}
				var lw toolscache.ListerWatcher = &toolscache.ListWatch{
					WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
						o.Watch, o.AllowWatchBookmarks, o.LabelSelector = true, true, "courier.dev/origin=m"
						return dc.Resource(gvr).Namespace("team-a").Watch(ctx, o)
					},
				}
				wrapped := false
				if install {
					u := &unstructured.Unstructured{}
					u.SetGroupVersionKind(trainJobGVK)
					if w := i.wrap(lw, u); w != nil {
						lw, wrapped = w, true
					}
				}
				w, err := lw.(toolscache.ListerWatcherWithContext).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
				if err != nil {
					return nil, err, wrapped
				}
				var got []watch.Event
				for ev := range w.ResultChan() {
					got = append(got, ev)
				}
				return got, nil, wrapped
			}
			want, wantErr, _ := run(false)
			wantRequests := requests
			requests = nil
			before := handoffs.Load()
			got, gotErr, wrapped := run(true)
			if handedOff := handoffs.Load() > before; handedOff != tc.wantHandoff {
				t.Errorf("response handed to the Decoder: %v, want %v", handedOff, tc.wantHandoff)
			}
			if !wrapped {
				t.Fatal("the unstructured ListWatch was not wrapped")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events differ (-client-go +wrapped):\n%s", diff)
			}
			if diff := cmp.Diff(errString(wantErr), errString(gotErr)); diff != "" {
				t.Errorf("errors differ (-client-go +wrapped):\n%s", diff)
			}
			if apierrors.ReasonForError(wantErr) != apierrors.ReasonForError(gotErr) {
				t.Errorf("error reasons differ: %v, %v", apierrors.ReasonForError(wantErr), apierrors.ReasonForError(gotErr))
			}
			if diff := cmp.Diff(wantRequests, requests); diff != "" {
				t.Errorf("requests differ (-client-go +wrapped):\n%s", diff)
			}
			if tc.wantHandoff && (len(got) == 0 || !strings.Contains(requests[0], "watch=true")) {
				t.Errorf("expected watch events, got %v", got)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCountingWatch checks that a counting cache's watch reports each event
// it reads once, with its kind and size, whichever decoder decodes it: the
// ERROR event goes to client-go's.
func TestCountingWatch(t *testing.T) {
	frames := []string{
		event(t, watch.Added, trainJob("t1", "1")),
		event(t, watch.Modified, trainJob("t1", "2")),
		event(t, watch.Bookmark, bookmark(trainJobGVK, "3")),
		event(t, watch.Error, status410()),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.Join(frames, "")))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}

	type tally struct{ Events, Bytes int }
	counted := map[schema.GroupVersionKind]tally{}
	count := func(gvk schema.GroupVersionKind) func(int) {
		return func(bytes int) {
			c := counted[gvk]
			c.Events++
			c.Bytes += bytes
			counted[gvk] = c
		}
	}
	// install sets up the HTTP client that hands the body over; the
	// informers it installs are built again here to reach their wrap.
	opts := cache.Options{}
	if err := install(cfg, &opts, true, count); err != nil {
		t.Fatal(err)
	}
	i := newInformers(cfg, opts.Scheme)
	i.dropManagedFields, i.count = true, count
	dc, err := dynamic.NewForConfigAndClient(cfg, opts.HTTPClient)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: trainJobGVK.Group, Version: trainJobGVK.Version, Resource: "trainjobs"}
	lw := &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return dc.Resource(gvr).Namespace("team-a").Watch(ctx, o)
		},
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(trainJobGVK)
	wrapped := i.wrap(lw, u)
	if wrapped == nil {
		t.Fatal("the unstructured ListWatch was not wrapped")
	}
	w, err := wrapped.(toolscache.ListerWatcherWithContext).WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for range w.ResultChan() {
		read++
	}
	if read != len(frames) {
		t.Fatalf("read %d events, want %d", read, len(frames))
	}
	want := tally{Events: len(frames)}
	for _, f := range frames {
		// A frame is the event's JSON, without the newline after it.
		want.Bytes += len(strings.TrimSuffix(f, "\n"))
	}
	if diff := cmp.Diff(map[schema.GroupVersionKind]tally{trainJobGVK: want}, counted); diff != "" {
		t.Errorf("counted events (-want +got):\n%s", diff)
	}
}
