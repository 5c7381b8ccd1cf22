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

// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters/status,verbs=patch
// +kubebuilder:rbac:groups="",namespace=courier-system,resources=secrets,verbs=get;list;watch

const secretNameIndex = "spec.kubeconfig.secretRef.name"

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
		recorder:   mgr.GetEventRecorder("courier-workercluster"),
		now:        time.Now,

		capacityWritten: map[string]time.Time{},
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &courier.WorkerCluster{}, secretNameIndex,
		func(o client.Object) []string {
			return []string{o.(*courier.WorkerCluster).Spec.Kubeconfig.SecretRef.Name}
		}); err != nil {
		return fmt.Errorf("indexing WorkerClusters by Secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workercluster").
		For(&courier.WorkerCluster{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleted()))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.workerClustersForSecret)).
		WatchesRawSource(source.Channel(r.cache.Events(), &handler.EnqueueRequestForObject{})).
		Complete(r)
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

// observe reads the kubeconfig, makes sure the cache connects with it, and
// returns the connection's state. Only errors reading the manager's API are
// returned; everything about the worker is in the state.
func (r *Reconciler) observe(ctx context.Context, wc *courier.WorkerCluster) (cluster.State, error) {
	ref := wc.Spec.Kubeconfig.SecretRef
	secret := &corev1.Secret{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: ref.Name}, secret)
	if apierrors.IsNotFound(err) {
		return r.configError(wc, courier.ReasonSecretNotFound,
			"Secret %s/%s does not exist. Create it with the worker's kubeconfig under key %q.", r.namespace, ref.Name, ref.Key), nil
	}
	if err != nil {
		return cluster.State{}, fmt.Errorf("getting kubeconfig Secret: %w", err)
	}
	data, ok := secret.Data[ref.Key]
	if !ok {
		return r.configError(wc, courier.ReasonSecretNotFound,
			"Secret %s/%s has no key %q. Put the worker's kubeconfig under that key, or set spec.kubeconfig.secretRef.key.", r.namespace, ref.Name, ref.Key), nil
	}
	restConfig, err := cluster.ParseKubeconfig(data)
	if cerr := (*cluster.Error)(nil); errors.As(err, &cerr) {
		// Name the Secret: it is what a person must fix.
		return r.configError(wc, cerr.Reason, "Secret %s/%s, key %q: %s", r.namespace, ref.Name, ref.Key, cerr.Message), nil
	}
	r.cache.Connect(wc.Name, data, restConfig)
	state, _ := r.cache.State(wc.Name)
	return state, nil
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
