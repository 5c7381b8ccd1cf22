package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the field manager of everything courier-local applies.
const fieldOwner = client.FieldOwner("courier-local")

// serviceAccountKubeconfig returns a kubeconfig that reaches the cluster of
// base as ServiceAccount ns/name, with a long-lived token from a
// service-account-token Secret: the identity a real deployment would use,
// so that what the local environment runs is bound by the same RBAC.
func serviceAccountKubeconfig(ctx context.Context, c client.Client, base []byte, ns, name string) ([]byte, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-token", Namespace: ns,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: name}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the token Secret of ServiceAccount %s/%s: %w", ns, name, err)
	}
	var token []byte
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		token = secret.Data[corev1.ServiceAccountTokenKey]
		return len(token) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the token of ServiceAccount %s/%s (kube-controller-manager fills it): %w", ns, name, err)
	}
	cfg, err := clientcmd.Load(base)
	if err != nil {
		return nil, fmt.Errorf("loading a kubeconfig: %w", err)
	}
	current, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[current.Cluster] == nil {
		return nil, fmt.Errorf("the kubeconfig has no cluster for its current context %q", cfg.CurrentContext)
	}
	user := "system:serviceaccount:" + ns + ":" + name
	out := clientcmdapi.NewConfig()
	out.Clusters[current.Cluster] = cfg.Clusters[current.Cluster]
	out.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: string(token)}
	// The namespace, as a Pod's own: clients that default to it (a
	// credential plugin reading Secrets) look where they would in-cluster.
	out.Contexts[user] = &clientcmdapi.Context{Cluster: current.Cluster, AuthInfo: user, Namespace: ns}
	out.CurrentContext = user
	data, err := clientcmd.Write(*out)
	if err != nil {
		return nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return data, nil
}
