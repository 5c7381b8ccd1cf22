package controllermanager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/config"
	"github.com/courierdev/courier/pkg/dispatch"
	"github.com/courierdev/courier/pkg/workercluster"
)

// Setup adds Courier's controllers and the worker cluster cache to mgr, and
// returns the cache.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.Configuration) (*cluster.Cache, error) {
	all, err := Adapters(cfg)
	if err != nil {
		return nil, err
	}
	adapters, unserved, err := servedAdapters(mgr.GetRESTMapper(), all)
	if err != nil {
		return nil, err
	}
	for _, kind := range unserved {
		ctrl.Log.WithName("setup").Info("Not dispatching a job kind the manager's API server does not serve; install its CRD on the manager and restart Courier", "kind", kind)
	}
	dispatcher := dispatch.New(mgr.GetClient(), mgr.GetEventRecorder("courier-dispatch"), dispatch.Options{
		Origin:            cfg.Origin,
		WorkerLostTimeout: cfg.WorkerLostTimeout.Duration,
		GCInterval:        cfg.GCInterval.Duration,
		Adapters:          adapters,
		UnservedKinds:     unserved,
	})
	var jobKinds []schema.GroupVersionKind
	for _, a := range adapters {
		jobKinds = append(jobKinds, a.GVK())
	}
	cache := cluster.NewCache(cluster.Options{
		Origin:            cfg.Origin,
		QPS:               *cfg.WorkerClient.QPS,
		Burst:             int(*cfg.WorkerClient.Burst),
		Kinds:             append([]schema.GroupVersionKind{kueue.SchemeGroupVersion.WithKind("Workload")}, jobKinds...),
		UnstructuredKinds: jobKinds,
		OptionalKinds:     []schema.GroupVersionKind{adapter.PodGroupGVK, adapter.SchedulingWorkloadGVK},
		Scheme:            mgr.GetScheme(),
		OnRemoteChange:    dispatcher.OnRemoteChange,
	})
	if err := mgr.Add(cache); err != nil {
		return nil, fmt.Errorf("adding the worker cluster cache: %w", err)
	}
	if err := workercluster.SetupWithManager(mgr, cfg.Namespace, cache); err != nil {
		return nil, fmt.Errorf("setting up the WorkerCluster controller: %w", err)
	}
	if err := dispatcher.SetupWithManager(mgr, cache); err != nil {
		return nil, err
	}
	return cache, nil
}

// Adapters returns the built-in TrainJob adapter and one generic adapter per
// configured external framework.
func Adapters(cfg *configv1alpha1.Configuration) ([]adapter.Adapter, error) {
	adapters := []adapter.Adapter{adapter.NewTrainJob()}
	for _, fw := range cfg.ExternalFrameworks {
		gvk, err := config.ParseFrameworkName(fw.Name)
		if err != nil {
			return nil, fmt.Errorf("parsing external framework %q: %w", fw.Name, err)
		}
		adapters = append(adapters, adapter.New(adapter.Kind{
			GVK:            gvk,
			ManagedByPath:  fw.ManagedBy.Path,
			ManagedByValue: fw.ManagedBy.Value,
			StatusFields:   fw.Status.Fields,
		}))
	}
	return adapters, nil
}

// servedAdapters splits the adapters into those whose kind the manager's API
// server serves and the names of the others, which Courier reports instead
// of failing to start.
func servedAdapters(mapper meta.RESTMapper, all []adapter.Adapter) ([]adapter.Adapter, []string, error) {
	var served []adapter.Adapter
	var unserved []string
	for _, a := range all {
		gvk := a.GVK()
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			served = append(served, a)
		case meta.IsNoMatchError(err):
			unserved = append(unserved, cluster.KindName(gvk))
		default:
			return nil, nil, fmt.Errorf("looking up %s on the manager: %w", cluster.KindName(gvk), err)
		}
	}
	return served, unserved, nil
}
