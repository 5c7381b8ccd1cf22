package workercluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",namespace=courier-system,resources=secrets,verbs=patch

// CredentialsFinalizer holds a kubeconfig Secret, or a ClusterProfile,
// while a WorkerCluster names it: deleting a WorkerCluster and its Secret
// together, the usual teardown, or a cluster inventory deleting the
// profile of a cluster that leaves it, would otherwise cut Courier off
// from a worker it is still draining, and leave its copies running there.
const CredentialsFinalizer = "courier.dev/worker-credentials"

// holdCredentials puts CredentialsFinalizer on the Secret or ClusterProfile
// wc names, and takes it off those no WorkerCluster names any more,
// releasing wc's own once wc has drained (gone is set).
func (r *Reconciler) holdCredentials(ctx context.Context, wc *courier.WorkerCluster, gone bool) error {
	secrets := &corev1.SecretList{}
	if err := r.client.List(ctx, secrets, client.InNamespace(r.namespace)); err != nil {
		return fmt.Errorf("listing kubeconfig Secrets: %w", err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		mine := wc.Spec.Kubeconfig != nil && s.Name == wc.Spec.Kubeconfig.SecretRef.Name
		if err := r.hold(ctx, s, mine, gone, secretNameIndex, s.Name, wc.Name); err != nil {
			return err
		}
	}
	if !r.profiles {
		return nil
	}
	profiles := &inventory.ClusterProfileList{}
	if err := r.client.List(ctx, profiles); err != nil {
		return fmt.Errorf("listing ClusterProfiles: %w", err)
	}
	for i := range profiles.Items {
		p := &profiles.Items[i]
		ref := wc.Spec.ClusterProfileRef
		mine := ref != nil && p.Namespace == ref.Namespace && p.Name == ref.Name
		if err := r.hold(ctx, p, mine, gone, profileIndex, p.Namespace+"/"+p.Name, wc.Name); err != nil {
			return err
		}
	}
	return nil
}

// hold adds or removes the finalizer of one Secret or ClusterProfile: added
// when wc names it and stays, removed when no WorkerCluster does.
func (r *Reconciler) hold(ctx context.Context, obj client.Object, mine, gone bool, index, value, wc string) error {
	held := controllerutil.ContainsFinalizer(obj, CredentialsFinalizer)
	switch {
	case mine && !gone && !held && obj.GetDeletionTimestamp() == nil:
		return r.patchFinalizer(ctx, obj, true)
	case held && (!mine || gone):
		named, err := r.namedByOthers(ctx, index, value, wc)
		if err != nil || named {
			return err
		}
		return r.patchFinalizer(ctx, obj, false)
	}
	return nil
}

// namedByOthers reports whether a WorkerCluster other than except names
// the Secret or ClusterProfile.
func (r *Reconciler) namedByOthers(ctx context.Context, index, value, except string) (bool, error) {
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list, client.MatchingFields{index: value}); err != nil {
		return false, fmt.Errorf("listing the WorkerClusters of %s: %w", value, err)
	}
	for _, wc := range list.Items {
		if wc.Name != except {
			return true, nil
		}
	}
	return false, nil
}

func (r *Reconciler) patchFinalizer(ctx context.Context, obj client.Object, add bool) error {
	before := obj.DeepCopyObject().(client.Object)
	if add {
		controllerutil.AddFinalizer(obj, CredentialsFinalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, CredentialsFinalizer)
	}
	if err := r.client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("%s the finalizer of %s %s: %w", map[bool]string{true: "adding", false: "removing"}[add], kindOf(obj),
			types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, err)
	}
	return nil
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*corev1.Secret); ok {
		return "Secret"
	}
	return "ClusterProfile"
}

// followProfile deletes a WorkerCluster whose ClusterProfile is being
// deleted: its cluster is leaving the inventory. The WorkerCluster then
// drains as any deleted one does, the profile held until it has. It
// reports whether it deleted the WorkerCluster.
func (r *Reconciler) followProfile(ctx context.Context, wc *courier.WorkerCluster) (bool, error) {
	ref := wc.Spec.ClusterProfileRef
	if ref == nil || !r.profiles {
		return false, nil
	}
	cp := &inventory.ClusterProfile{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, cp); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if cp.DeletionTimestamp == nil {
		return false, nil
	}
	if err := r.client.Delete(ctx, wc, client.Preconditions{UID: &wc.UID}); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting the WorkerCluster of a deleted ClusterProfile: %w", err)
	}
	r.recorder.Eventf(wc, nil, corev1.EventTypeWarning, courier.EventClusterProfileDeleted, "Delete",
		"ClusterProfile %s/%s is being deleted, so Courier deleted this WorkerCluster: it drains first, as any deleted WorkerCluster does, and the profile goes once it has.",
		ref.Namespace, ref.Name)
	ctrl.LoggerFrom(ctx).V(2).Info("Deleting WorkerCluster of a deleted ClusterProfile", "clusterProfile", ref.Namespace+"/"+ref.Name)
	return true, nil
}

func (r *Reconciler) workerClustersForProfile(ctx context.Context, o client.Object) []reconcile.Request {
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list, client.MatchingFields{profileIndex: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing WorkerClusters for ClusterProfile", "clusterProfile", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, wc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: wc.Name}})
	}
	return reqs
}
