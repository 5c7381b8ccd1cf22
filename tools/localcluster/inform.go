package localcluster

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

// Delivery is how an informer handed an object over.
type Delivery int

const (
	// Updated: a version of the object, added or updated.
	Updated Delivery = iota
	// Deleted: the object's deletion, with its last version.
	Deleted
	// DeletedUnwatched: the object found gone when the informer listed
	// again after its watch broke (its API server restarted, say). The
	// object is the last version the informer had: later ones went unseen.
	DeletedUnwatched
)

// Gone tells a deletion, however it was seen.
func (d Delivery) Gone() bool { return d != Updated }

// Inform runs informers of the given kinds on one cluster, in the
// environment's job Namespace, and calls seen with every version and
// deletion, until ctx ends. It returns once they have synced.
func (e *Env) Inform(ctx context.Context, cluster string, byObject map[client.Object]cache.ByObject, seen func(obj client.Object, d Delivery)) error {
	cfg, err := e.RESTConfig(cluster)
	if err != nil {
		return err
	}
	return InformAs(ctx, cluster, cfg, byObject, seen)
}

// InformAs is Inform as the identity of cfg, a config of cluster.
func InformAs(ctx context.Context, cluster string, cfg *rest.Config, byObject map[client.Object]cache.ByObject, seen func(obj client.Object, d Delivery)) error {
	c, err := cache.New(cfg, cache.Options{
		Scheme:            framework.Scheme,
		DefaultNamespaces: map[string]cache.Config{Namespace: {}},
		ByObject:          byObject,
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating informers of %s: %w", cluster, err)
	}
	handler := deliveries(seen)
	for obj := range byObject {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("getting an informer of %T on %s: %w", obj, cluster, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching %T on %s: %w", obj, cluster, err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("syncing informers of %s: %w", cluster, context.Cause(ctx))
	}
	return nil
}

// deliveries hands an informer's events to seen. An informer keys objects
// by name: one deleted and created again while its watch was down comes
// back from the list as an update of the old, which is the old one's
// deletion, unseen, and a new object.
func deliveries(seen func(obj client.Object, d Delivery)) toolscache.ResourceEventHandler {
	call := func(obj any, d Delivery) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj, d = tomb.Obj, DeletedUnwatched
		}
		if o, ok := obj.(client.Object); ok {
			seen(o, d)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { call(obj, Updated) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(client.Object); ok {
				if n, ok := obj.(client.Object); ok && o.GetUID() != n.GetUID() {
					call(old, DeletedUnwatched)
				}
			}
			call(obj, Updated)
		},
		DeleteFunc: func(obj any) { call(obj, Deleted) },
	}
}
