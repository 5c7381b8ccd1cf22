// Package watchdecode makes controller-runtime informers decode JSON watch
// events in fewer passes over their bytes than client-go, with the same
// results: see Decoder for the decoding and Install for how a cache's
// informers come to use it. A cache that strips managed fields anyway
// (NewCacheWithoutManagedFields) also skips decoding them.
package watchdecode

import (
	"context"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewCache is a cache.NewCacheFunc: cache.New with informers whose watches
// decode JSON events with a Decoder. Use it as cache.New, or as
// ctrl.Options.NewCache.
func NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	if err := Install(cfg, &opts); err != nil {
		return nil, err
	}
	return cache.New(cfg, opts)
}

// NewCacheWithoutManagedFields is NewCache for a cache whose objects carry
// no metadata.managedFields: every transform it runs (the default one and
// each object's) first strips them with StripManagedFields, and its watches
// do not decode them at all (Decoder.DropManagedFields).
func NewCacheWithoutManagedFields(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	return newCacheWithoutManagedFields(cfg, opts, nil)
}

// Counter returns, for the kind an informer watches, the function told the
// size in bytes, as the API server sent it, of each watch event the
// informer reads. That function runs on the watch's goroutine, once per
// event, so it must be quick.
type Counter func(gvk schema.GroupVersionKind) func(bytes int)

// CountingCacheWithoutManagedFields returns a cache.NewCacheFunc that
// builds NewCacheWithoutManagedFields's cache and reports every watch event
// its Decoders read to count: a client's own count of what it receives,
// which neither the API server's audit log nor client-go's metrics give.
// A watch left to client-go's decoders (see Install) is not counted.
func CountingCacheWithoutManagedFields(count Counter) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		return newCacheWithoutManagedFields(cfg, opts, count)
	}
}

func newCacheWithoutManagedFields(cfg *rest.Config, opts cache.Options, count Counter) (cache.Cache, error) {
	opts.DefaultTransform = withoutManagedFieldsFirst(opts.DefaultTransform)
	byObject := make(map[client.Object]cache.ByObject, len(opts.ByObject))
	for obj, by := range opts.ByObject {
		if by.Transform != nil {
			by.Transform = withoutManagedFieldsFirst(by.Transform)
		}
		byObject[obj] = by
	}
	opts.ByObject = byObject
	if err := install(cfg, &opts, true, count); err != nil {
		return nil, err
	}
	return cache.New(cfg, opts)
}

// withoutManagedFieldsFirst strips managed fields, then runs next.
func withoutManagedFieldsFirst(next toolscache.TransformFunc) toolscache.TransformFunc {
	strip := StripManagedFields()
	if next == nil {
		return strip
	}
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, err
		}
		return next(out)
	}
}

// Install sets opts.NewInformer, and opts.HTTPClient and opts.Scheme as
// cache.New would default them, so that the cache's typed and unstructured
// informers decode their watch events with a Decoder.
//
// How: controller-runtime builds each informer's ListerWatcher itself, with
// a client whose decoders cannot be replaced (the dynamic client always sets
// its own). What it lets a caller replace is the informer constructor, which
// is handed that ListerWatcher, and the HTTP client. So the informer's watch
// function still runs, and builds and sends the request exactly as today
// (URL, namespace, selectors, bookmarks, headers, retries, errors); the
// HTTP client, seeing a request marked by the wrapped watch function, keeps
// a successful JSON response's body and hands client-go the same response
// with an empty body. client-go's watcher on the empty body ends at once and
// is stopped; the wrapped watch function returns a watcher over the real
// body with a Decoder instead. Anything else (an error, another status,
// another content type) reaches client-go untouched.
//
// Install leaves opts alone if NewInformer is already set, or if the HTTP
// client has a Timeout: http.Client would bound the real body's reads with
// it, and the handed-over body escapes that bound.
func Install(cfg *rest.Config, opts *cache.Options) error {
	return install(cfg, opts, false, nil)
}

func install(cfg *rest.Config, opts *cache.Options, dropManagedFields bool, count Counter) error {
	if opts.NewInformer != nil {
		return nil
	}
	if opts.HTTPClient == nil {
		// As cache.New defaults it.
		c := rest.CopyConfig(cfg)
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			return err
		}
		opts.HTTPClient = hc
	}
	if opts.HTTPClient.Timeout != 0 {
		return nil
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	hc := *opts.HTTPClient
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = handoffTransport{next: next}
	opts.HTTPClient = &hc

	i := newInformers(cfg, opts.Scheme)
	i.dropManagedFields = dropManagedFields
	i.count = count
	opts.NewInformer = i.newInformer
	return nil
}

func newInformers(cfg *rest.Config, s *runtime.Scheme) *informers {
	return &informers{
		scheme: s,
		// As controller-runtime's cache builds typed clients.
		typed: serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(s)},
		// As the dynamic client, which serves unstructured informers, sets it.
		unstructured: dynamic.ConfigFor(rest.CopyConfig(cfg)).NegotiatedSerializer,
	}
}

type informers struct {
	scheme            *runtime.Scheme
	typed             runtime.NegotiatedSerializer
	unstructured      runtime.NegotiatedSerializer
	dropManagedFields bool
	count             Counter
}

var log = ctrl.Log.WithName("watchdecode")

// newInformer is cache.Options.NewInformer: the default informer over a
// ListerWatcher whose watches decode with a Decoder.
func (i *informers) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if wrapped := i.wrap(lw, obj); wrapped != nil {
		lw = wrapped
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

func (i *informers) wrap(lw toolscache.ListerWatcher, obj runtime.Object) toolscache.ListerWatcher {
	orig, ok := lw.(*toolscache.ListWatch)
	if !ok || orig.WatchFuncWithContext == nil {
		return nil
	}
	var d *Decoder
	var err error
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		// Metadata watches are left as they are.
		return nil
	case runtime.Unstructured:
		d, err = NewUnstructuredDecoder(i.unstructured, obj.GetObjectKind().GroupVersionKind())
	default:
		gvk, gerr := apiutil.GVKForObject(obj, i.scheme)
		if gerr != nil {
			return nil
		}
		d, err = NewTypedDecoder(i.typed, i.scheme, gvk)
	}
	if err != nil {
		log.V(2).Info("Watch decoded by client-go", "type", obj, "reason", err)
		return nil
	}
	if i.dropManagedFields {
		d.DropManagedFields()
	}
	if i.count != nil {
		d.CountEvents(i.count(d.gvk))
	}
	wrapped := *orig
	wrapped.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		h := &handoff{}
		w, err := orig.WatchFuncWithContext(context.WithValue(ctx, handoffKey{}, h), opts)
		body := h.take()
		if body == nil {
			return w, err
		}
		// client-go was handed an empty body: its watcher has ended or
		// will at once.
		if w != nil {
			w.Stop()
		}
		if err != nil {
			_ = body.Close()
			return nil, err
		}
		return d.NewWatcher(ctx, body), nil
	}
	return &wrapped
}

type handoffKey struct{}

// handoffs counts the watch responses decoded by a Decoder, for tests.
var handoffs atomic.Int64

// handoff carries a watch response's body from the HTTP client to the
// watch function that sent the request.
type handoff struct {
	mu   sync.Mutex
	body io.ReadCloser
	done bool
}

func (h *handoff) take() io.ReadCloser {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	body := h.body
	h.body = nil
	return body
}

// keep takes body unless a body was already taken for this watch call.
func (h *handoff) keep(body io.ReadCloser) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || h.body != nil {
		return false
	}
	h.body = body
	return true
}

// handoffTransport keeps the body of a successful JSON response to a
// request marked with a handoff, and passes everything else through.
type handoffTransport struct{ next http.RoundTripper }

func (t handoffTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h, _ := req.Context().Value(handoffKey{}).(*handoff)
	resp, err := t.next.RoundTrip(req)
	if h == nil || err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	mediaType, _, perr := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if perr != nil || mediaType != runtime.ContentTypeJSON || !h.keep(resp.Body) {
		return resp, err
	}
	handoffs.Add(1)
	empty := *resp
	empty.Body = http.NoBody
	empty.ContentLength = 0
	return &empty, nil
}

// WrappedTransport lets callers that wrap transports see the one beneath.
func (t handoffTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
