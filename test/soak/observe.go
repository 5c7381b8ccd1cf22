package soak

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
	"github.com/courierdev/courier/test/localcluster"
)

// observe starts informers that feed rec until ctx ends, and waits until
// they have synced: on the manager the Workloads and the run's jobs, on
// each worker the run's job copies and every pod. They start before the
// first submission, so that no version goes unseen; after an API server
// comes back they relist, and a deletion missed meanwhile is seen then.
func observe(ctx context.Context, env *localcluster.Env, run string, rec *recorder) error {
	ofRun := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{runLabel: run})}
	err := informers(ctx, env, env.Manager, map[client.Object]cache.ByObject{
		&kueue.Workload{}: {}, &trainer.TrainJob{}: ofRun, &batchv1.Job{}: ofRun, &courier.WorkerCluster{}: {},
	}, func(obj client.Object, _ bool) {
		switch o := obj.(type) {
		case *kueue.Workload:
			rec.managerWorkload(o, time.Now())
		case *courier.WorkerCluster:
			rec.workerCluster(o, time.Now())
		default:
			rec.managerJob(obj)
		}
	})
	if err != nil {
		return err
	}
	for _, w := range env.Workers {
		err := informers(ctx, env, w, map[client.Object]cache.ByObject{
			&trainer.TrainJob{}: ofRun, &batchv1.Job{}: ofRun, &corev1.Pod{}: {},
		}, func(obj client.Object, deleted bool) {
			if pod, ok := obj.(*corev1.Pod); ok {
				rec.workerPod(w, pod, deleted, time.Now())
				return
			}
			rec.workerCopy(w, obj, deleted, time.Now())
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// informers runs one cluster's informers of the given kinds in the soak's
// namespace, calling seen with every version and deletion.
func informers(ctx context.Context, env *localcluster.Env, cluster string, byObject map[client.Object]cache.ByObject, seen func(obj client.Object, deleted bool)) error {
	cfg, err := env.RESTConfig(cluster)
	if err != nil {
		return err
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            framework.Scheme,
		DefaultNamespaces: map[string]cache.Config{localcluster.Namespace: {}},
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
