package soak

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/tools/localcluster"
)

// observe starts informers that feed rec until ctx ends, and waits until
// they have synced: on the manager the Workloads and the run's jobs, on
// each worker the run's job copies and every pod. They start before the
// first submission, so that no version goes unseen; after an API server
// comes back they relist, and a deletion missed meanwhile is seen then.
func observe(ctx context.Context, env *localcluster.Env, run string, rec *recorder) error {
	ofRun := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{runLabel: run})}
	err := env.Inform(ctx, env.Manager, map[client.Object]cache.ByObject{
		&kueue.Workload{}: {}, &trainer.TrainJob{}: ofRun, &batchv1.Job{}: ofRun, &courier.WorkerCluster{}: {},
	}, func(obj client.Object, _ localcluster.Delivery) {
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
		err := env.Inform(ctx, w, map[client.Object]cache.ByObject{
			&trainer.TrainJob{}: ofRun, &batchv1.Job{}: ofRun, &corev1.Pod{}: {},
		}, func(obj client.Object, d localcluster.Delivery) {
			if pod, ok := obj.(*corev1.Pod); ok {
				rec.workerPod(w, pod, d.Gone(), time.Now())
				return
			}
			rec.workerCopy(w, obj, d, time.Now())
		})
		if err != nil {
			return err
		}
	}
	return nil
}
