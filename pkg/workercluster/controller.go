// Package workercluster reconciles WorkerClusters: it reads each one's
// kubeconfig Secret, keeps a connection in the cluster cache, and reports
// the connection's state in the WorkerCluster's status.
package workercluster

import (
	"context"
	"errors"
	"fmt"
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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=courier.dev,resources=workerclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

const secretNameIndex = "spec.kubeconfig.secretRef.name"

// Reconciler keeps WorkerCluster connections and status.
type Reconciler struct {
	client    client.Client
	namespace string
	cache     *cluster.Cache
	recorder  events.EventRecorder
	now       func() time.Time
}

// SetupWithManager registers the controller. Secrets are read from
// namespace, Courier's own.
func SetupWithManager(mgr ctrl.Manager, namespace string, cache *cluster.Cache) error {
	r := &Reconciler{
		client:    mgr.GetClient(),
		namespace: namespace,
		cache:     cache,
		recorder:  mgr.GetEventRecorder("courier-workercluster"),
		now:       time.Now,
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &courier.WorkerCluster{}, secretNameIndex,
		func(o client.Object) []string {
			return []string{o.(*courier.WorkerCluster).Spec.Kubeconfig.SecretRef.Name}
		}); err != nil {
		return fmt.Errorf("indexing WorkerClusters by Secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workercluster").
		For(&courier.WorkerCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.workerClustersForSecret)).
		WatchesRawSource(source.Channel(cache.Events(), &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile observes the Secret and the connection, computes the status,
// and writes it once.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wc := &courier.WorkerCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, wc); err != nil {
		if apierrors.IsNotFound(err) {
			r.cache.Remove(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx)
	log.V(4).Info("Reconciling WorkerCluster")

	state, err := r.observe(ctx, wc)
	if err != nil {
		return reconcile.Result{}, err
	}
	status := computeStatus(wc.Status, wc.Generation, state, r.now())
	if equality.Semantic.DeepEqual(status, wc.Status) {
		return reconcile.Result{}, nil
	}
	before := wc.DeepCopy()
	wc.Status = status
	if err := r.client.Status().Patch(ctx, wc, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching WorkerCluster status: %w", err)
	}
	r.recordTransition(ctx, wc, before.Status)
	return reconcile.Result{}, nil
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
		return r.configError(wc, cerr.Reason, "%s", cerr.Message), nil
	}
	r.cache.Connect(wc.Name, data, restConfig)
	state, _ := r.cache.State(wc.Name)
	return state, nil
}

func (r *Reconciler) configError(wc *courier.WorkerCluster, reason, format string, args ...any) cluster.State {
	r.cache.Disconnect(wc.Name)
	return cluster.State{Err: &cluster.Error{Reason: reason, Message: fmt.Sprintf(format, args...)}, Since: r.now()}
}

// recordTransition emits an event when Active changes, after the status
// write succeeded.
func (r *Reconciler) recordTransition(ctx context.Context, wc *courier.WorkerCluster, old courier.WorkerClusterStatus) {
	now := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive)
	was := meta.FindStatusCondition(old.Conditions, courier.WorkerClusterActive)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	eventType := corev1.EventTypeNormal
	if now.Status == metav1.ConditionFalse {
		eventType = corev1.EventTypeWarning
	}
	r.recorder.Eventf(wc, nil, eventType, now.Reason, "Connect", now.Message)
	ctrl.LoggerFrom(ctx).V(2).Info("WorkerCluster connection changed", "active", now.Status, "reason", now.Reason)
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
