package cli

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/controllermanager"
)

// connectWorker returns a client for a worker, with the kubeconfig of its
// WorkerCluster's Secret in Courier's namespace, validated as Courier
// validates it: the plugin sees the worker as Courier does, with
// Courier's permissions there.
func connectWorker(ctx context.Context, manager client.Client, courierNamespace, worker string) (client.Client, error) {
	wc := &courier.WorkerCluster{}
	if err := manager.Get(ctx, client.ObjectKey{Name: worker}, wc); err != nil {
		return nil, fmt.Errorf("getting WorkerCluster %s: %w", worker, err)
	}
	ref := wc.Spec.Kubeconfig.SecretRef
	key := ref.Key
	if key == "" {
		key = "kubeconfig"
	}
	secret := &corev1.Secret{}
	err := manager.Get(ctx, client.ObjectKey{Namespace: courierNamespace, Name: ref.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("secret %s/%s of WorkerCluster %s does not exist; if Courier runs in another namespace, pass it with --courier-namespace", courierNamespace, ref.Name, worker)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading Secret %s/%s of WorkerCluster %s is forbidden to you; reaching a worker needs get on Secrets in Courier's namespace: %w", courierNamespace, ref.Name, worker, err)
	case err != nil:
		return nil, fmt.Errorf("getting Secret %s/%s of WorkerCluster %s: %w", courierNamespace, ref.Name, worker, err)
	}
	data, ok := secret.Data[key]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s of WorkerCluster %s has no key %q", courierNamespace, ref.Name, worker, key)
	}
	cfg, err := cluster.ParseKubeconfig(data)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of WorkerCluster %s: %w", worker, err)
	}
	cfg.Timeout = requestTimeout
	cfg.UserAgent = "kubectl-courier/" + worker
	c, err := client.New(cfg, client.Options{Scheme: controllermanager.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a client for WorkerCluster %s: %w", worker, err)
	}
	return c, nil
}
