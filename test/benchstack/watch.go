package benchstack

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/localcluster"
)

// watch starts informers that feed t until ctx ends, and waits for them to
// sync: the manager's Workloads, and on each worker the run's TrainJob
// copies and Courier's Workload copies. They start before any job is
// submitted, so that no copy goes unseen.
func watch(ctx context.Context, env *localcluster.Env, runSelector labels.Selector, t *tracker) error {
	if err := inform(ctx, env, env.Manager, map[client.Object]cache.ByObject{&kueue.Workload{}: {}},
		func(obj any, _ bool) {
			if wl, ok := obj.(*kueue.Workload); ok {
				t.managerWorkload(wl, time.Now())
			}
		}); err != nil {
		return err
	}
	origin, err := labels.NewRequirement(courier.OriginLabel, selection.Exists, nil)
	if err != nil {
		return fmt.Errorf("selecting Courier's copies: %w", err)
	}
	for _, w := range env.Workers {
		byObject := map[client.Object]cache.ByObject{
			&trainer.TrainJob{}: {Label: runSelector},
			&kueue.Workload{}:   {Label: labels.NewSelector().Add(*origin)},
		}
		if err := inform(ctx, env, w, byObject, func(obj any, deleted bool) {
			switch o := obj.(type) {
			case *trainer.TrainJob:
				if _, ok := o.Labels[courier.OriginLabel]; ok {
					t.trainJobCopy(w, o, deleted)
				}
			case *kueue.Workload:
				t.workloadCopy(w, o.Name)
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// inform runs one cluster's informers of the given kinds in the
// benchmark's namespace, calling seen with every version and deletion.
func inform(ctx context.Context, env *localcluster.Env, cluster string, byObject map[client.Object]cache.ByObject, seen func(obj any, deleted bool)) error {
	cfg, err := env.RESTConfig(cluster)
	if err != nil {
		return err
	}
	informers, err := cache.New(cfg, cache.Options{
		Scheme:            framework.Scheme,
		DefaultNamespaces: map[string]cache.Config{localcluster.Namespace: {}},
		ByObject:          byObject,
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating informers of %s: %w", cluster, err)
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen(obj, false) },
		UpdateFunc: func(_, obj any) { seen(obj, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			seen(obj, true)
		},
	}
	for obj := range byObject {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("getting an informer of %T on %s: %w", obj, cluster, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching %T on %s: %w", obj, cluster, err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return fmt.Errorf("syncing informers of %s: %w", cluster, context.Cause(ctx))
	}
	return nil
}
