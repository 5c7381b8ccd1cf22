package workercluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",namespace=courier-system,resources=secrets,verbs=patch

// CredentialsFinalizer holds a kubeconfig Secret while a WorkerCluster
// names it: deleting a WorkerCluster and its Secret together, the usual
// teardown, would otherwise cut Courier off from a worker it is still
// draining, and leave its copies running there.
const CredentialsFinalizer = "courier.dev/worker-credentials"

// holdCredentials puts CredentialsFinalizer on the Secret wc names, and
// takes it off the Secrets no WorkerCluster names any more, releasing
// wc's own once wc has drained (gone is set).
func (r *Reconciler) holdCredentials(ctx context.Context, wc *courier.WorkerCluster, gone bool) error {
	secrets := &corev1.SecretList{}
	if err := r.client.List(ctx, secrets, client.InNamespace(r.namespace)); err != nil {
		return fmt.Errorf("listing kubeconfig Secrets: %w", err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		mine := s.Name == wc.Spec.Kubeconfig.SecretRef.Name
		held := controllerutil.ContainsFinalizer(s, CredentialsFinalizer)
		switch {
		case mine && !gone && !held && s.DeletionTimestamp == nil:
			if err := r.patchFinalizer(ctx, s, true); err != nil {
				return err
			}
		case held && (!mine || gone):
			named, err := r.namedByOthers(ctx, s.Name, wc.Name)
			if err != nil || named {
				return err
			}
			if err := r.patchFinalizer(ctx, s, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// namedByOthers reports whether a WorkerCluster other than except names
// the Secret.
func (r *Reconciler) namedByOthers(ctx context.Context, secret, except string) (bool, error) {
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list, client.MatchingFields{secretNameIndex: secret}); err != nil {
		return false, fmt.Errorf("listing the WorkerClusters of Secret %s: %w", secret, err)
	}
	for _, wc := range list.Items {
		if wc.Name != except {
			return true, nil
		}
	}
	return false, nil
}

func (r *Reconciler) patchFinalizer(ctx context.Context, s *corev1.Secret, add bool) error {
	before := s.DeepCopy()
	if add {
		controllerutil.AddFinalizer(s, CredentialsFinalizer)
	} else {
		controllerutil.RemoveFinalizer(s, CredentialsFinalizer)
	}
	if err := r.client.Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("%s the finalizer of Secret %s: %w", map[bool]string{true: "adding", false: "removing"}[add],
			types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, err)
	}
	return nil
}
