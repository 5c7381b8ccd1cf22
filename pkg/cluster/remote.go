package cluster

import (
	"context"
	"net"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
)

// Remote is a working connection to one worker.
type Remote struct {
	// Name is the WorkerCluster's name.
	Name string
	// Client reads from informers that see only objects with this manager's
	// origin label, and writes straight to the worker with a timeout.
	Client client.Client
	// Cache holds the informers, for controllers that watch remote objects.
	Cache cache.Cache
	// APIReader reads straight from the worker, for the rare checks the
	// origin-filtered informers cannot answer, such as who owns an object
	// that blocked a create.
	APIReader client.Reader

	version  string
	served   sets.Set[schema.GroupVersionKind]
	missing  []string
	stop     context.CancelFunc
	stopped  chan struct{}
	discover func(context.Context) (sets.Set[schema.GroupVersionKind], []string, error)
	health   func(context.Context) error
}

// Serves reports whether the worker serves a kind, so that jobs of a kind
// missing there go elsewhere.
func (r *Remote) Serves(gvk schema.GroupVersionKind) bool { return r.served.Has(gvk) }

// KindName spells a kind as the configuration does: Kind.version.group.
func KindName(gvk schema.GroupVersionKind) string {
	return gvk.Kind + "." + gvk.Version + "." + gvk.Group
}

func (r *Remote) close() {
	r.stop()
	<-r.stopped
}

// connect builds a Remote: it reads the worker's version, finds which of the
// wanted kinds it serves, checks that the credentials may list them, and
// starts origin-filtered informers for them. Every step is bounded by ctx
// and by the per-request timeouts.
func connect(ctx context.Context, name string, base *rest.Config, opts *Options) (*Remote, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "courier/" + name
	dialer := &net.Dialer{Timeout: opts.RequestTimeout, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext
	instrument, bound := metrics.InstrumentTransport(name), headerTimeout(opts.RequestTimeout)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return instrument(bound(rt)) })

	// Calls through the direct client are bounded as a whole; informers use
	// cfg, whose watches may stream for as long as the server keeps them.
	direct := rest.CopyConfig(cfg)
	direct.Timeout = opts.RequestTimeout

	dc, err := discovery.NewDiscoveryClientForConfig(direct)
	if err != nil {
		return nil, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig is not usable: %v.", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, classify(err, "reading the server version")
	}
	discover := func(context.Context) (sets.Set[schema.GroupVersionKind], []string, error) {
		served, missing, err := discoverKinds(dc, append(slices.Clone(opts.Kinds), opts.OptionalKinds...))
		missing = slices.DeleteFunc(missing, func(name string) bool {
			return slices.ContainsFunc(opts.OptionalKinds, func(gvk schema.GroupVersionKind) bool { return KindName(gvk) == name })
		})
		return served, missing, err
	}
	served, missing, err := discover(ctx)
	if err != nil {
		return nil, err
	}
	directClient, err := client.New(direct, client.Options{Scheme: opts.Scheme})
	if err != nil {
		return nil, classify(err, "creating a client")
	}
	if err := checkAccess(ctx, directClient, served, opts.Origin); err != nil {
		return nil, err
	}

	informers, err := cache.New(cfg, cache.Options{
		Scheme:                      opts.Scheme,
		DefaultLabelSelector:        labels.SelectorFromSet(labels.Set{courier.OriginLabel: opts.Origin}),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, classify(err, "creating informers")
	}
	cacheCtx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = informers.Start(cacheCtx)
	}()
	r := &Remote{
		Name:      name,
		Cache:     informers,
		APIReader: directClient,
		version:   info.GitVersion,
		served:    served,
		missing:   missing,
		stop:      stop,
		stopped:   stopped,
		discover:  discover,
		health: func(ctx context.Context) error {
			return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		},
	}
	for _, gvk := range served.UnsortedList() {
		informer, err := informers.GetInformer(ctx, objectFor(opts, gvk), cache.BlockUntilSynced(false))
		if err != nil {
			r.close()
			return nil, classify(err, "starting the "+KindName(gvk)+" informer")
		}
		if opts.OnRemoteChange != nil {
			if _, err := informer.AddEventHandler(changeHandler(name, opts.OnRemoteChange)); err != nil {
				r.close()
				return nil, classify(err, "watching the "+KindName(gvk)+" informer")
			}
		}
	}
	if !informers.WaitForCacheSync(ctx) {
		r.close()
		return nil, classify(context.DeadlineExceeded, "syncing informers")
	}
	// Unstructured reads, too, come from the informers, never from the server.
	r.Client, err = client.New(direct, client.Options{Scheme: opts.Scheme, Cache: &client.CacheOptions{Reader: informers, Unstructured: true}})
	if err != nil {
		r.close()
		return nil, classify(err, "creating a client")
	}
	return r, nil
}

// discoverKinds splits the wanted kinds into those the worker serves and the
// names of those it does not.
func discoverKinds(dc discovery.DiscoveryInterface, wanted []schema.GroupVersionKind) (sets.Set[schema.GroupVersionKind], []string, error) {
	served := sets.New[schema.GroupVersionKind]()
	var missing []string
	byGV := map[schema.GroupVersion][]schema.GroupVersionKind{}
	for _, gvk := range wanted {
		byGV[gvk.GroupVersion()] = append(byGV[gvk.GroupVersion()], gvk)
	}
	for gv, gvks := range byGV {
		list, err := dc.ServerResourcesForGroupVersion(gv.String())
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, classify(err, "discovering "+gv.String())
		}
		kinds := sets.New[string]()
		if list != nil {
			for _, res := range list.APIResources {
				kinds.Insert(res.Kind)
			}
		}
		for _, gvk := range gvks {
			if kinds.Has(gvk.Kind) {
				served.Insert(gvk)
			} else {
				missing = append(missing, KindName(gvk))
			}
		}
	}
	slices.Sort(missing)
	return served, missing, nil
}

// checkAccess lists each served kind once, so that credentials lacking RBAC
// permissions are reported as such instead of as informers that never sync.
func checkAccess(ctx context.Context, c client.Client, served sets.Set[schema.GroupVersionKind], origin string) error {
	for _, gvk := range served.UnsortedList() {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := c.List(ctx, list, client.Limit(1), client.MatchingLabels{courier.OriginLabel: origin})
		if err != nil {
			return classify(err, "listing "+KindName(gvk))
		}
	}
	return nil
}

// objectFor returns an empty object of a kind: typed when the scheme knows
// it and the caller did not ask for unstructured.
func objectFor(opts *Options, gvk schema.GroupVersionKind) client.Object {
	if obj, err := opts.Scheme.New(gvk); err == nil && !slices.Contains(opts.UnstructuredKinds, gvk) && !slices.Contains(opts.OptionalKinds, gvk) {
		if cobj, ok := obj.(client.Object); ok {
			return cobj
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// changeHandler forwards an informer's events, tombstones unwrapped.
func changeHandler(cluster string, onChange func(string, client.Object)) toolscache.ResourceEventHandler {
	forward := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok {
			onChange(cluster, o)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    forward,
		UpdateFunc: func(_, obj any) { forward(obj) },
		DeleteFunc: forward,
	}
}
