package cluster

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
	"github.com/courierdev/courier/pkg/watchdecode"
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
	capacity *capacityTracker
	stop     context.CancelFunc
	stopped  chan struct{}
	discover func(context.Context) (sets.Set[schema.GroupVersionKind], []string, error)
	// access says why the capacity cannot be known, as capacityAccess.
	access func(context.Context, sets.Set[schema.GroupVersionKind]) (string, error)
	health func(context.Context) error
	// informers are those of the served kinds, but the quota kinds: their
	// changes go to Options.OnRemoteChange once the worker counts as
	// connected (forwardChanges), and they say how far they have read
	// (Reached).
	informers map[schema.GroupVersionKind]cache.Informer
	// gates is the courier.PreemptionGatesState the probe found; empty
	// until it has.
	gates atomic.Value
}

// NewRemote returns a Remote over given clients that serves the given
// kinds, without informers, health checks or discovery: for tests of code
// that reads and writes workers. If the served kinds include Kueue's
// ClusterQueue, LocalQueue and ResourceFlavor, its capacity is computed
// from c on every call.
func NewRemote(name string, c client.Client, apiReader client.Reader, served ...schema.GroupVersionKind) *Remote {
	kinds := sets.New(served...)
	return &Remote{Name: name, Client: c, APIReader: apiReader, served: kinds, capacity: newCapacityTracker(context.Background(), c, kinds, "", false)}
}

// Serves reports whether the worker serves a kind, so that jobs of a kind
// missing there go elsewhere.
func (r *Remote) Serves(gvk schema.GroupVersionKind) bool { return r.served.Has(gvk) }

// List lists the objects of a kind that the worker's origin-filtered
// informers hold; none if the worker does not serve the kind.
func (r *Remote) List(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	if !r.Serves(gvk) {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

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
// starts origin-filtered informers for them, and unfiltered ones for
// Kueue's quota objects where Courier may read them. Every step is bounded
// by ctx and by the per-request timeouts. notify is called when the quota
// objects change.
func connect(ctx context.Context, name string, base *rest.Config, opts *Options, notify func()) (*Remote, error) {
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
	// The objects writes return come as the informers hold them: without
	// managed fields, which are about half their bytes.
	direct.Wrap(watchdecode.ResponsesWithoutManagedFields)

	dc, err := discovery.NewDiscoveryClientForConfig(direct)
	if err != nil {
		return nil, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig is not usable: %v.", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, classify(err, "reading the server version")
	}
	optional := append(slices.Clone(opts.OptionalKinds), capacityKinds...)
	discover := func(context.Context) (sets.Set[schema.GroupVersionKind], []string, error) {
		served, missing, err := discoverKinds(dc, append(slices.Clone(opts.Kinds), optional...))
		missing = slices.DeleteFunc(missing, func(name string) bool {
			return slices.ContainsFunc(optional, func(gvk schema.GroupVersionKind) bool { return KindName(gvk) == name })
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
	if err := checkAccess(ctx, directClient, served.Clone().Delete(capacityKinds...), opts.Origin); err != nil {
		return nil, err
	}
	access := func(ctx context.Context, served sets.Set[schema.GroupVersionKind]) (string, error) {
		return capacityAccess(ctx, directClient, served)
	}
	unknown, err := access(ctx, served)
	if err != nil {
		return nil, err
	}
	if unknown != "" {
		ctrl.Log.WithName("cluster").Info("Worker capacity unknown: Courier may not read Kueue's quota objects there", "cluster", name, "reason", unknown)
	}
	// The quota objects are watched whole, where Courier may read them.
	byObject := map[client.Object]cache.ByObject{}
	if unknown == "" && served.HasAll(capacityKinds...) {
		for _, gvk := range capacityKinds {
			byObject[objectFor(opts, gvk)] = cache.ByObject{Label: labels.Everything()}
		}
	}
	// cache.New with watch events decoded in fewer passes over their bytes,
	// and objects without their managed fields, which Courier never reads
	// and which are often half an object: watches do not even decode them.
	// Every event read is counted in the metrics.
	informers, err := watchdecode.CountingCacheWithoutManagedFields(metrics.RemoteWatchCounter(name))(cfg, cache.Options{
		Scheme:                      opts.Scheme,
		DefaultLabelSelector:        labels.SelectorFromSet(labels.Set{courier.OriginLabel: opts.Origin}),
		ByObject:                    byObject,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, classify(err, "creating informers")
	}
	cacheCtx, stop := context.WithCancel(context.Background())
	capacity := newCapacityTracker(cacheCtx, informers, served, unknown, true)
	stopped := make(chan struct{})
	var running sync.WaitGroup
	running.Go(func() { _ = informers.Start(cacheCtx) })
	running.Go(func() { coalesce(cacheCtx, capacity.wake, notify) })
	if opts.OnRoom != nil {
		running.Go(func() { coalesce(cacheCtx, capacity.room, func() { opts.OnRoom(name) }) })
	}
	go func() {
		running.Wait()
		close(stopped)
	}()
	r := &Remote{
		informers: map[schema.GroupVersionKind]cache.Informer{},
		Name:      name,
		Cache:     informers,
		APIReader: directClient,
		version:   info.GitVersion,
		served:    served,
		missing:   missing,
		capacity:  capacity,
		stop:      stop,
		stopped:   stopped,
		discover:  discover,
		access:    access,
		health: func(ctx context.Context) error {
			return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		},
	}
	if len(byObject) > 0 {
		for _, gvk := range capacityKinds {
			informer, err := informers.GetInformer(ctx, objectFor(opts, gvk), cache.BlockUntilSynced(false))
			if err == nil {
				_, err = informer.AddEventHandler(capacity.handler(true))
			}
			if err != nil {
				r.close()
				return nil, classify(err, "watching "+KindName(gvk))
			}
		}
	}
	for _, gvk := range served.Clone().Delete(capacityKinds...).UnsortedList() {
		informer, err := informers.GetInformer(ctx, objectFor(opts, gvk), cache.BlockUntilSynced(false))
		if err != nil {
			r.close()
			return nil, classify(err, "starting the "+KindName(gvk)+" informer")
		}
		for field, extract := range opts.Indexes {
			if err := informers.IndexField(ctx, objectFor(opts, gvk), field, extract); err != nil {
				r.close()
				return nil, classify(err, "indexing the "+KindName(gvk)+" informer")
			}
		}
		r.informers[gvk] = informer
		// Courier's waiting copies are the capacity's pending demand.
		if gvk == workloadGVK {
			if _, err := informer.AddEventHandler(capacity.handler(false)); err != nil {
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

// forwardChanges sends the changes of the worker's objects to onChange,
// starting with every object the informers hold, each as added. It is
// called once the worker counts as connected: a change is worth a pass only
// when the pass can reach the worker. Were the handlers added before the
// informers synced, the objects already on a worker that comes back (the
// copies of a job dispatched elsewhere while it was lost) would bring their
// passes while it still counted as out of reach, and nothing would bring
// them again until the next sweep. An informer
// replays what it holds to a handler added late, under the same lock as
// its later changes, so no change is missed.
func (r *Remote) forwardChanges(onChange func(string, client.Object, client.Object, bool)) error {
	if onChange == nil {
		return nil
	}
	for _, informer := range r.informers {
		if _, err := informer.AddEventHandler(changeHandler(r.Name, onChange)); err != nil {
			return classify(err, "watching the informers")
		}
	}
	return nil
}

// Reached reports whether the worker's informer of gvk has read its
// changes up to version, the resourceVersion a write to the worker
// returned: the object that write made, or its deletion since, is in the
// informer or on its way there in moments. It says true when it cannot
// tell (no informer of the kind, or versions it cannot compare), so that
// callers fall back on time.
func (r *Remote) Reached(gvk schema.GroupVersionKind, version string) bool {
	informer, ok := r.informers[gvk].(interface{ LastSyncResourceVersion() string })
	if !ok {
		return true
	}
	order, err := resourceversion.CompareResourceVersion(informer.LastSyncResourceVersion(), version)
	return err != nil || order >= 0
}

// changeHandler forwards an informer's events, tombstones unwrapped.
func changeHandler(cluster string, onChange func(string, client.Object, client.Object, bool)) toolscache.ResourceEventHandler {
	forward := func(old, obj any, deleted bool) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		before, _ := old.(client.Object)
		onChange(cluster, before, o, deleted)
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { forward(nil, obj, false) },
		UpdateFunc: func(old, obj any) { forward(old, obj, false) },
		DeleteFunc: func(obj any) { forward(nil, obj, true) },
	}
}
