package controllermanager

import (
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/config"
	"github.com/courierdev/courier/pkg/workercluster"
)

// Setup adds Courier's controllers and the worker cluster cache to mgr, and
// returns the cache.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.Configuration) (*cluster.Cache, error) {
	kinds, err := remoteKinds(cfg)
	if err != nil {
		return nil, err
	}
	cache := cluster.NewCache(cluster.Options{
		Origin: cfg.Origin,
		QPS:    *cfg.WorkerClient.QPS,
		Burst:  int(*cfg.WorkerClient.Burst),
		Kinds:  kinds,
		Scheme: mgr.GetScheme(),
	})
	if err := mgr.Add(cache); err != nil {
		return nil, fmt.Errorf("adding the worker cluster cache: %w", err)
	}
	if err := workercluster.SetupWithManager(mgr, cfg.Namespace, cache); err != nil {
		return nil, fmt.Errorf("setting up the WorkerCluster controller: %w", err)
	}
	return cache, nil
}

// remoteKinds are the kinds watched on every worker: Kueue's Workload, the
// built-in TrainJob and the configured external frameworks.
func remoteKinds(cfg *configv1alpha1.Configuration) ([]schema.GroupVersionKind, error) {
	kinds := []schema.GroupVersionKind{
		kueue.SchemeGroupVersion.WithKind("Workload"),
		trainer.GroupVersion.WithKind(trainer.TrainJobKind),
	}
	for _, fw := range cfg.ExternalFrameworks {
		gvk, err := config.ParseFrameworkName(fw.Name)
		if err != nil {
			return nil, fmt.Errorf("parsing external framework %q: %w", fw.Name, err)
		}
		kinds = append(kinds, gvk)
	}
	return kinds, nil
}
