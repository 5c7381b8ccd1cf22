package controllermanager

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/config"
	"github.com/courierdev/courier/pkg/dispatch"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/placementdecision"
	"github.com/courierdev/courier/pkg/webhook"
	"github.com/courierdev/courier/pkg/workercluster"
)

// Setup adds Courier's controllers and the worker cluster cache to mgr, and
// returns the cache.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.Configuration) (*cluster.Cache, error) {
	all, err := Adapters(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	adapters, unserved, statusInObject, err := servedAdapters(dc, all)
	if err != nil {
		return nil, err
	}
	for _, kind := range unserved {
		ctrl.Log.WithName("setup").Info("Not dispatching a job kind the manager's API server does not serve; install its CRD on the manager and restart Courier", "kind", kind)
	}
	var jobKinds []schema.GroupVersionKind
	for _, a := range adapters {
		jobKinds = append(jobKinds, a.GVK())
	}
	var dispatcher *dispatch.Reconciler
	lost := lostworker.Settings{
		Policy:          cfg.LostWorkerPolicy,
		Timeout:         cfg.WorkerLostTimeout.Duration,
		FenceMargin:     configv1alpha1.MinFencedLostTimeout(cfg.Fence),
		SelfFaultShare:  *cfg.SelfFault.Share,
		SelfFaultWindow: cfg.SelfFault.Window.Duration,
		Started:         time.Now(),
	}
	cache := cluster.NewCache(cluster.Options{
		Origin:            cfg.Origin,
		QPS:               *cfg.WorkerClient.QPS,
		Burst:             int(*cfg.WorkerClient.Burst),
		Kinds:             append([]schema.GroupVersionKind{kueue.SchemeGroupVersion.WithKind("Workload")}, jobKinds...),
		UnstructuredKinds: jobKinds,
		OptionalKinds:     []schema.GroupVersionKind{adapter.PodGroupGVK, adapter.SchedulingWorkloadGVK},
		Scheme:            mgr.GetScheme(),
		Indexes:           workload.Indexes(),
		Heartbeat: &cluster.Heartbeat{Namespace: cfg.Fence.Namespace, Interval: cfg.Fence.HeartbeatInterval.Duration,
			Duration: cfg.Fence.Timeout.Duration},
		// The cache and the dispatcher need each other; the cache calls this
		// only once connections run, after both exist.
		OnRemoteChange: func(cluster string, old, obj client.Object, deleted bool) {
			dispatcher.OnRemoteChange(cluster, old, obj, deleted)
		},
		OnRoom: func(cluster string) { dispatcher.OnRoom(cluster) },
	})
	dispatcher = dispatch.New(mgr.GetClient(), cache, mgr.GetEventRecorder("courier-dispatch"), dispatch.Options{
		Origin:            cfg.Origin,
		WorkerLostTimeout: cfg.WorkerLostTimeout.Duration,
		LostWorker:        lost,
		GCInterval:        cfg.GCInterval.Duration,
		Concurrency:       int(*cfg.DispatchConcurrency),
		StatusMirrorDelay: cfg.StatusMirrorDelay.Duration,
		KueueFinishGrace:  cfg.KueueFinishGrace.Duration,
		Adapters:          adapters,
		UnservedKinds:     unserved,
		StatusInObject:    statusInObject,
	})
	if err := mgr.Add(cache); err != nil {
		return nil, fmt.Errorf("adding the worker cluster cache: %w", err)
	}
	inventory, err := inventoryServed(dc)
	if err != nil {
		return nil, err
	}
	if !inventory[clusterProfiles] {
		ctrl.Log.WithName("setup").Info("Not watching ClusterProfiles: the manager's API server does not serve them; WorkerClusters that name one say so", "groupVersion", inventoryGroupVersion)
	}
	if err := workercluster.SetupWithManager(mgr, workercluster.Options{
		Namespace: cfg.Namespace, LostWorker: lost, Origin: cfg.Origin, FenceNamespace: cfg.Fence.Namespace,
		Cache: cache, Placements: dispatcher,
		Plugins: cluster.NewPlugins(cfg.WorkerCredentials), ExpiryWarning: cfg.WorkerCredentials.ExpiryWarning.Duration,
		ClusterProfiles: inventory[clusterProfiles],
	}); err != nil {
		return nil, fmt.Errorf("setting up the WorkerCluster controller: %w", err)
	}
	if err := dispatcher.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if *cfg.PlacementDecisions.Enable {
		if !inventory[placementDecisions] {
			return nil, fmt.Errorf("placementDecisions.enable is true, but the manager's API server does not serve PlacementDecisions (%s): install their CRD (config/crd/bases in sigs.k8s.io/cluster-inventory-api), or turn placementDecisions off", inventoryGroupVersion)
		}
		if err := placementdecision.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the PlacementDecision controller: %w", err)
		}
	}
	if err := webhook.Setup(mgr, cfg, adapters); err != nil {
		return nil, fmt.Errorf("setting up the webhooks: %w", err)
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
			ForwardPaths:   fw.ForwardedSpecPaths,
		}))
	}
	return adapters, nil
}

// servedAdapters splits the adapters into those whose kind the manager's API
// server serves and the names of the others, which Courier reports instead
// of failing to start. It also returns the served kinds that have no status
// subresource: their status is written with the object.
func servedAdapters(dc discovery.DiscoveryInterface, all []adapter.Adapter) (served []adapter.Adapter, unserved []string, statusInObject []schema.GroupVersionKind, err error) {
	for _, a := range all {
		gvk := a.GVK()
		resources, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, nil, fmt.Errorf("looking up %s on the manager: %w", cluster.KindName(gvk), err)
		}
		plural := ""
		if resources != nil {
			for _, r := range resources.APIResources {
				if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
					plural = r.Name
				}
			}
		}
		if plural == "" {
			unserved = append(unserved, cluster.KindName(gvk))
			continue
		}
		served = append(served, a)
		if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == plural+"/status" }) {
			statusInObject = append(statusInObject, gvk)
		}
	}
	return served, unserved, statusInObject, nil
}

// The cluster inventory's API, which Courier uses where the manager serves it.
const (
	inventoryGroupVersion = "multicluster.x-k8s.io/v1alpha1"
	clusterProfiles       = "clusterprofiles"
	placementDecisions    = "placementdecisions"
)

// inventoryServed says which of the cluster inventory's resources the
// manager's API server serves: their CRDs are optional.
func inventoryServed(dc discovery.DiscoveryInterface) (map[string]bool, error) {
	resources, err := dc.ServerResourcesForGroupVersion(inventoryGroupVersion)
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up %s on the manager: %w", inventoryGroupVersion, err)
	}
	served := map[string]bool{}
	for _, r := range resources.APIResources {
		served[r.Name] = true
	}
	return served, nil
}
