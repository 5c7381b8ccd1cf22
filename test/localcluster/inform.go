package localcluster

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

// Inform runs informers of the given kinds on one cluster, in the
// environment's job Namespace, and calls seen with every version and
// deletion, until ctx ends. It returns once they have synced.
func (e *Env) Inform(ctx context.Context, cluster string, byObject map[client.Object]cache.ByObject, seen func(obj client.Object, deleted bool)) error {
	cfg, err := e.RESTConfig(cluster)
	if err != nil {
		return err
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            framework.Scheme,
		DefaultNamespaces: map[string]cache.Config{Namespace: {}},
		ByObject:          byObject,
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating informers of %s: %w", cluster, err)
	}
	call := func(obj any, deleted bool) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok {
			seen(o, deleted)
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(obj, false) },
		UpdateFunc: func(_, obj any) { call(obj, false) },
		DeleteFunc: func(obj any) { call(obj, true) },
	}
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
