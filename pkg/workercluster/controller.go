// Package workercluster reconciles WorkerClusters: it reads each one's
// kubeconfig Secret, keeps a connection in the cluster cache, and reports
// the connection's state in the WorkerCluster's status. A deleted
// WorkerCluster is drained before it goes (see drain.go).
package workercluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/metrics"
)

// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters/status,verbs=patch
// +kubebuilder:rbac:groups="",namespace=courier-system,resources=secrets,verbs=get;list;watch

// Indexes of WorkerClusters by what they name: the kubeconfig Secret, and
// the ClusterProfile as namespace/name.
const (
	secretNameIndex = "spec.kubeconfig.secretRef.name"
	profileIndex    = "spec.clusterProfileRef"
)

// capacityPeriod is how often, at most, a worker's capacity is written to
// its status, and how often a connected worker is looked at again for it:
// its usage changes with every admission there, which nothing announces.
const capacityPeriod = 10 * time.Second

// Options configure the WorkerCluster controller.
type Options struct {
	// Namespace is Courier's own, where the kubeconfig Secrets are.
	Namespace string
	// LostWorker are the lost-worker settings: the policy, the timeout,
	// the fence's margin and when Courier takes losses for its own fault.
	LostWorker lostworker.Settings
	// Origin is this manager's, and FenceNamespace where the workers'
	// fences run, for the FenceReady condition.
	Origin, FenceNamespace string
	// Cache holds the connections to workers.
	Cache *cluster.Cache
	// Placements tells which Workloads still need a worker being drained.
	Placements Placements
	// Plugins are the exec credential plugins the Configuration allows.
	Plugins *cluster.Plugins
	// ExpiryWarning is how long before a credential expires, with nothing
	// to renew it, the CredentialValid condition turns False.
	ExpiryWarning time.Duration
	// ClusterProfiles says whether the manager serves ClusterProfiles: only
	// then are they watched.
	ClusterProfiles bool
}

// Reconciler keeps WorkerCluster connections and status.
type Reconciler struct {
	client     client.Client
	namespace  string
	lost       lostworker.Settings
	origin     string
	fenceNS    string
	cache      *cluster.Cache
	placements Placements
	plugins    *cluster.Plugins
	expiry     time.Duration
	profiles   bool
	recorder   events.EventRecorder
	now        func() time.Time

	// capacityWritten is when each worker's capacity was last written.
	capacityMu      sync.Mutex
	capacityWritten map[string]time.Time
}

// SetupWithManager registers the controller.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	r := &Reconciler{
		client:     mgr.GetClient(),
		namespace:  opts.Namespace,
		lost:       opts.LostWorker,
		origin:     opts.Origin,
		fenceNS:    opts.FenceNamespace,
		cache:      opts.Cache,
		placements: opts.Placements,
		plugins:    opts.Plugins,
		expiry:     opts.ExpiryWarning,
		profiles:   opts.ClusterProfiles,
		recorder:   mgr.GetEventRecorder("courier-workercluster"),
		now:        time.Now,

		capacityWritten: map[string]time.Time{},
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &courier.WorkerCluster{}, secretNameIndex,
		func(o client.Object) []string {
			if k := o.(*courier.WorkerCluster).Spec.Kubeconfig; k != nil {
				return []string{k.SecretRef.Name}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("indexing WorkerClusters by Secret: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &courier.WorkerCluster{}, profileIndex,
		func(o client.Object) []string {
			if ref := o.(*courier.WorkerCluster).Spec.ClusterProfileRef; ref != nil {
				return []string{ref.Namespace + "/" + ref.Name}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("indexing WorkerClusters by ClusterProfile: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("workercluster").
		For(&courier.WorkerCluster{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleted()))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.workerClustersForSecret)).
		WatchesRawSource(source.Channel(r.cache.Events(), &handler.EnqueueRequestForObject{}))
	if r.profiles {
		b = b.Watches(&inventory.ClusterProfile{}, handler.EnqueueRequestsFromMapFunc(r.workerClustersForProfile))
	}
	return b.Complete(r)
}

// Reconcile observes the Secret and the connection, computes the status,
// and writes it once.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wc := &courier.WorkerCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, wc); err != nil {
		if apierrors.IsNotFound(err) {
			r.cache.Remove(req.Name)
			r.capacityMu.Lock()
			delete(r.capacityWritten, req.Name)
			r.capacityMu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx)
	log.V(4).Info("Reconciling WorkerCluster")
	if wc.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(wc, courier.DrainFinalizer) {
		before := wc.DeepCopy()
		controllerutil.AddFinalizer(wc, courier.DrainFinalizer)
		if err := r.client.Patch(ctx, wc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the drain finalizer: %w", err)
		}
	}

	if wc.DeletionTimestamp == nil {
		if gone, err := r.followProfile(ctx, wc); err != nil || gone {
			return reconcile.Result{}, err
		}
		if err := r.holdCredentials(ctx, wc, false); err != nil {
			return reconcile.Result{}, err
		}
	}
	state, err := r.observe(ctx, wc)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.now()
	var result reconcile.Result
	if state.Connected {
		result.RequeueAfter = r.holdCapacity(wc, &state, now)
	}
	status := computeStatus(wc.Status, wc.Generation, state, now)
	credential := credentialCondition(state.Credential, credentialSource(wc, r.namespace), r.expiry, wc.Generation, now)
	meta.SetStatusCondition(&status.Conditions, credential)
	var expiresAt time.Time
	if status.Credential != nil && status.Credential.ExpiresAt != nil {
		expiresAt = status.Credential.ExpiresAt.Time
	}
	metrics.Credential(wc.Name, expiresAt, credential.Status == metav1.ConditionFalse)
	if recheck := credentialRecheck(state.Credential, r.expiry, now); recheck > 0 && (result.RequeueAfter == 0 || recheck < result.RequeueAfter) {
		result.RequeueAfter = recheck
	}
	meta.SetStatusCondition(&status.Conditions, runtimePatchCondition(wc, now))
	meta.SetStatusCondition(&status.Conditions, fenceCondition(wc.Status.Conditions, state, r.origin, r.fenceNS, wc.Generation, now))
	metrics.FenceAnswering(wc.Name, state.Connected && state.Fence.Answering)
	recheck, err := r.lostStatus(ctx, wc, &status, state, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if recheck > 0 && (result.RequeueAfter == 0 || recheck < result.RequeueAfter) {
		result.RequeueAfter = recheck
	}
	if wc.DeletionTimestamp != nil {
		drained, cond, err := r.drain(ctx, wc)
		if err != nil || drained {
			return reconcile.Result{}, err
		}
		meta.SetStatusCondition(&status.Conditions, cond)
		if result.RequeueAfter == 0 || drainPeriod < result.RequeueAfter {
			result.RequeueAfter = drainPeriod
		}
	}
	if equality.Semantic.DeepEqual(status, wc.Status) {
		return result, nil
	}
	before := wc.DeepCopy()
	wc.Status = status
	if err := r.client.Status().Patch(ctx, wc, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching WorkerCluster status: %w", err)
	}
	if !sameCapacity(before.Status, wc.Status) {
		r.capacityMu.Lock()
		r.capacityWritten[wc.Name] = now
		r.capacityMu.Unlock()
	}
	r.recordTransition(ctx, wc, before.Status)
	r.recordCredential(wc, before.Status)
	r.recordRevocation(wc, before.Status)
	return result, nil
}

// holdCapacity keeps the status's capacity when the observed one may not
// be written yet: the first is written at once, changes at most once per
// capacityPeriod, so that a busy worker costs one status write per period,
// not one per admission. It returns when to look again.
func (r *Reconciler) holdCapacity(wc *courier.WorkerCluster, s *cluster.State, now time.Time) time.Duration {
	if s.Capacity == nil || len(wc.Status.Capacity) == 0 ||
		sameCapacity(wc.Status, courier.WorkerClusterStatus{Capacity: s.Capacity.Resources, CapacitySummary: s.Capacity.Summary}) {
		return capacityPeriod
	}
	r.capacityMu.Lock()
	last := r.capacityWritten[wc.Name]
	r.capacityMu.Unlock()
	if wait := last.Add(capacityPeriod).Sub(now); wait > 0 {
		s.Capacity = nil
		return wait
	}
	return capacityPeriod
}

func sameCapacity(a, b courier.WorkerClusterStatus) bool {
	return a.CapacitySummary == b.CapacitySummary && equality.Semantic.DeepEqual(a.Capacity, b.Capacity)
}

// observe builds the worker's target from its kubeconfig Secret or its
// ClusterProfile, makes sure the cache connects to it, and returns the
// connection's state. Only errors reading the manager's API are returned;
// everything about the worker is in the state.
func (r *Reconciler) observe(ctx context.Context, wc *courier.WorkerCluster) (cluster.State, error) {
	var target cluster.Target
	var cerr *cluster.Error
	var err error
	switch {
	case wc.Spec.Kubeconfig != nil:
		target, cerr, err = r.kubeconfigTarget(ctx, wc.Spec.Kubeconfig.SecretRef)
	case wc.Spec.ClusterProfileRef != nil:
		target, cerr, err = r.profileTarget(ctx, *wc.Spec.ClusterProfileRef)
	default:
		cerr = &cluster.Error{Reason: courier.ReasonInvalidKubeconfig, Message: "The WorkerCluster names neither a kubeconfig Secret nor a ClusterProfile."}
	}
	if err != nil {
		return cluster.State{}, err
	}
	if cerr != nil {
		return r.configError(wc, cerr.Reason, "%s", cerr.Message), nil
	}
	r.cache.Connect(wc.Name, target)
	state, _ := r.cache.State(wc.Name)
	return state, nil
}

// kubeconfigTarget reads the kubeconfig Secret. A problem with it is a
// configuration error naming the Secret, which is what a person must fix.
func (r *Reconciler) kubeconfigTarget(ctx context.Context, ref courier.SecretKeyReference) (cluster.Target, *cluster.Error, error) {
	secret := &corev1.Secret{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: ref.Name}, secret)
	if apierrors.IsNotFound(err) {
		return cluster.Target{}, &cluster.Error{Reason: courier.ReasonSecretNotFound, Message: fmt.Sprintf(
			"Secret %s/%s does not exist. Create it with the worker's kubeconfig under key %q.", r.namespace, ref.Name, ref.Key)}, nil
	}
	if err != nil {
		return cluster.Target{}, nil, fmt.Errorf("getting kubeconfig Secret: %w", err)
	}
	data, ok := secret.Data[ref.Key]
	if !ok {
		return cluster.Target{}, &cluster.Error{Reason: courier.ReasonSecretNotFound, Message: fmt.Sprintf(
			"Secret %s/%s has no key %q. Put the worker's kubeconfig under that key, or set spec.kubeconfig.secretRef.key.", r.namespace, ref.Name, ref.Key)}, nil
	}
	target, err := cluster.ParseKubeconfig(data, r.plugins)
	if cerr := (*cluster.Error)(nil); errors.As(err, &cerr) {
		return cluster.Target{}, &cluster.Error{Reason: cerr.Reason, Message: fmt.Sprintf("Secret %s/%s, key %q: %s", r.namespace, ref.Name, ref.Key, cerr.Message)}, nil
	}
	return target, nil, err
}

// profileTarget reads the ClusterProfile and builds the target from its
// access providers.
func (r *Reconciler) profileTarget(ctx context.Context, ref courier.ClusterProfileReference) (cluster.Target, *cluster.Error, error) {
	if !r.profiles {
		return cluster.Target{}, &cluster.Error{Reason: courier.ReasonClusterProfileNotFound, Message: "The manager's API server does not serve ClusterProfiles (multicluster.x-k8s.io/v1alpha1). Install their CRD (config/crd/bases in sigs.k8s.io/cluster-inventory-api) and restart Courier."}, nil
	}
	cp := &inventory.ClusterProfile{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, cp)
	if apierrors.IsNotFound(err) {
		return cluster.Target{}, &cluster.Error{Reason: courier.ReasonClusterProfileNotFound, Message: fmt.Sprintf(
			"ClusterProfile %s/%s does not exist. Register the worker in the cluster inventory, or name its ClusterProfile in spec.clusterProfileRef.", ref.Namespace, ref.Name)}, nil
	}
	if err != nil {
		return cluster.Target{}, nil, fmt.Errorf("getting ClusterProfile: %w", err)
	}
	target, err := r.plugins.ProfileTarget(cp)
	if cerr := (*cluster.Error)(nil); errors.As(err, &cerr) {
		return cluster.Target{}, cerr, nil
	}
	return target, nil, err
}

// credentialSource names where a person puts a new credential.
func credentialSource(wc *courier.WorkerCluster, namespace string) string {
	if k := wc.Spec.Kubeconfig; k != nil {
		return fmt.Sprintf("Secret %s/%s, key %q", namespace, k.SecretRef.Name, k.SecretRef.Key)
	}
	return "the kubeconfig Secret"
}

func (r *Reconciler) configError(wc *courier.WorkerCluster, reason, format string, args ...any) cluster.State {
	r.cache.Disconnect(wc.Name)
	return cluster.State{Err: &cluster.Error{Reason: reason, Message: fmt.Sprintf(format, args...)}, Since: r.now()}
}

// recordTransition emits an event when Active changes, and when the
// runtimePatch is found invalid, after the status write succeeded.
func (r *Reconciler) recordTransition(ctx context.Context, wc *courier.WorkerCluster, old courier.WorkerClusterStatus) {
	if patch := changed(wc.Status, old, courier.WorkerClusterRuntimePatchValid); patch != nil && patch.Status == metav1.ConditionFalse {
		r.recorder.Eventf(wc, nil, corev1.EventTypeWarning, patch.Reason, "Validate", "%s", patch.Message)
	}
	now := changed(wc.Status, old, courier.WorkerClusterActive)
	if now == nil {
		return
	}
	eventType := corev1.EventTypeNormal
	if now.Status == metav1.ConditionFalse {
		eventType = corev1.EventTypeWarning
	}
	r.recorder.Eventf(wc, nil, eventType, now.Reason, "Connect", "%s", now.Message)
	ctrl.LoggerFrom(ctx).V(2).Info("WorkerCluster connection changed", "active", now.Status, "reason", now.Reason)
}

// recordCredential emits an event when the credential starts to expire
// or has expired, and when it is valid again, after the status write.
func (r *Reconciler) recordCredential(wc *courier.WorkerCluster, old courier.WorkerClusterStatus) {
	now := changed(wc.Status, old, courier.WorkerClusterCredentialValid)
	if now == nil {
		return
	}
	was := meta.FindStatusCondition(old.Conditions, courier.WorkerClusterCredentialValid)
	switch {
	case now.Status == metav1.ConditionFalse:
		r.recorder.Eventf(wc, nil, corev1.EventTypeWarning, now.Reason, "Authenticate", "%s", now.Message)
	case now.Status == metav1.ConditionTrue && was != nil && was.Status == metav1.ConditionFalse:
		r.recorder.Eventf(wc, nil, corev1.EventTypeNormal, courier.EventCredentialRenewed, "Authenticate", "%s", now.Message)
	}
}

// changed returns a condition of the new status whose status or reason
// differs from the old one's, or nil.
func changed(cur, old courier.WorkerClusterStatus, t string) *metav1.Condition {
	now := meta.FindStatusCondition(cur.Conditions, t)
	was := meta.FindStatusCondition(old.Conditions, t)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return nil
	}
	return now
}

func (r *Reconciler) workerClustersForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.namespace {
		return nil
	}
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list, client.MatchingFields{secretNameIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing WorkerClusters for Secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, wc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: wc.Name}})
	}
	return reqs
}
