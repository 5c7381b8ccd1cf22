package benchstack

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/tools/localcluster"
)

// watch starts informers that feed t until ctx ends, and waits for them to
// sync: the manager's Workloads, and on each worker the run's TrainJob
// copies and Courier's Workload copies. They start before any job is
// submitted, so that no copy goes unseen.
func watch(ctx context.Context, env *localcluster.Env, runSelector labels.Selector, t *tracker) error {
	if err := env.Inform(ctx, env.Manager, map[client.Object]cache.ByObject{&kueue.Workload{}: {}},
		func(obj client.Object, _ localcluster.Delivery) {
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
		if err := env.Inform(ctx, w, byObject, func(obj client.Object, d localcluster.Delivery) {
			switch o := obj.(type) {
			case *trainer.TrainJob:
				if _, ok := o.Labels[courier.OriginLabel]; ok {
					t.trainJobCopy(w, o, d.Gone())
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
