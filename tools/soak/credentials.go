package soak

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/tools/localcluster"
)

// rotateOverlap is how long an old token stays valid after the new one is
// in the Secret, as a rotation by hand or by a tool leaves it.
const rotateOverlap = 5 * time.Second

// brokenKubeconfig is what a bad edit leaves in a kubeconfig Secret.
const brokenKubeconfig = "apiVersion: v1\nkind: Config\nclusters: [\n"

// credentials rotates and breaks the kubeconfig Secrets Courier reaches
// the workers with (localcluster.Configure: <worker>-kubeconfig, key
// kubeconfig, with the token of ServiceAccount courier-system/courier).
type credentials struct {
	mgr     client.Client
	workers map[string]client.Client
	mu      sync.Mutex
	// tokens are the names of the token Secret in use on each worker.
	tokens map[string]string
}

func newCredentials(mgr client.Client, workers map[string]client.Client) *credentials {
	c := &credentials{mgr: mgr, workers: workers, tokens: map[string]string{}}
	for w := range workers {
		// serviceAccountKubeconfig's Secret.
		c.tokens[w] = "courier-token"
	}
	return c
}

func secretKey(worker string) client.ObjectKey {
	return client.ObjectKey{Namespace: localcluster.CourierNamespace, Name: worker + "-kubeconfig"}
}

// reviveEvery is how often a rotation waiting for its token makes sure the
// worker's token controller runs.
const reviveEvery = 10 * time.Second

// rotate mints a new token for Courier on worker, puts it in the
// kubeconfig Secret, and revokes the old one by deleting its Secret. The
// worker's controllers fill the token in: revive starts them again if they
// exited.
func (c *credentials) rotate(ctx context.Context, worker string, revive func() error) (string, error) {
	if err := revive(); err != nil {
		return "", err
	}
	wc := c.workers[worker]
	c.mu.Lock()
	old := c.tokens[worker]
	c.mu.Unlock()
	fresh := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "courier-token-", Namespace: localcluster.CourierNamespace,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "courier"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if err := wc.Create(ctx, fresh); err != nil {
		return "", fmt.Errorf("creating a token Secret on %s: %w", worker, err)
	}
	var token []byte
	revived := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if time.Since(revived) > reviveEvery {
			revived = time.Now()
			if err := revive(); err != nil {
				return false, err
			}
		}
		if err := wc.Get(ctx, client.ObjectKeyFromObject(fresh), fresh); err != nil {
			return false, nil
		}
		token = fresh.Data[corev1.ServiceAccountTokenKey]
		return len(token) > 0, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for the token of %s on %s: %w", fresh.Name, worker, err)
	}
	err = c.updateSecret(ctx, worker, func(kubeconfig []byte) ([]byte, error) {
		cfg, err := clientcmd.Load(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig of %s: %w", worker, err)
		}
		for _, auth := range cfg.AuthInfos {
			auth.Token = string(token)
		}
		return clientcmd.Write(*cfg)
	})
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.tokens[worker] = fresh.Name
	c.mu.Unlock()
	sleep(ctx, rotateOverlap)
	revoked := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: old, Namespace: localcluster.CourierNamespace}}
	if err := client.IgnoreNotFound(wc.Delete(ctx, revoked)); err != nil {
		return "", fmt.Errorf("revoking the old token %s on %s: %w", old, worker, err)
	}
	return fmt.Sprintf("token %s replaced by %s, the old one revoked %s later", old, fresh.Name, rotateOverlap), nil
}

// breakFor replaces the worker's kubeconfig by one that does not parse,
// for hold, then puts the working one back.
func (c *credentials) breakFor(ctx context.Context, worker string, hold time.Duration) (string, error) {
	var good []byte
	err := c.updateSecret(ctx, worker, func(kubeconfig []byte) ([]byte, error) {
		good = kubeconfig
		return []byte(brokenKubeconfig), nil
	})
	if err != nil {
		return "", err
	}
	sleep(ctx, hold)
	rctx, cancel := restoreContext()
	defer cancel()
	err = c.updateSecret(rctx, worker, func([]byte) ([]byte, error) { return good, nil })
	return fmt.Sprintf("kubeconfig broken for %s, then restored", hold), err
}

// updateSecret rewrites the worker's kubeconfig Secret with edit, retrying
// on conflicts.
func (c *credentials) updateSecret(ctx context.Context, worker string, edit func([]byte) ([]byte, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if last = c.mgr.Get(ctx, secretKey(worker), s); last != nil {
			return false, nil
		}
		data, err := edit(s.Data["kubeconfig"])
		if err != nil {
			return false, err
		}
		s.Data["kubeconfig"] = data
		last = c.mgr.Update(ctx, s)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("updating Secret %s (last error: %v): %w", secretKey(worker), last, err)
	}
	return nil
}
