package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/controllermanager"
)

// Courier is Courier's manager running in the test process against the
// environment's manager cluster, exactly as cmd/courier sets it up.
type Courier struct {
	// Namespace is Courier's namespace on the manager cluster.
	Namespace string
	Config    *configv1alpha1.Configuration
	// Cache holds the worker connections.
	Cache *cluster.Cache

	cancel context.CancelFunc
	done   chan error
}

// StartCourier creates a namespace for Courier and starts its manager with
// leader election, probes and metrics off. mutate adjusts the configuration
// before defaults apply.
func (e *Environment) StartCourier(ctx context.Context, mutate func(*configv1alpha1.Configuration)) (*Courier, error) {
	ns, err := e.Manager.CreateNamespace(ctx, "courier")
	if err != nil {
		return nil, err
	}
	cfg := &configv1alpha1.Configuration{
		Namespace:      ns.Name,
		Health:         &configv1alpha1.HealthEndpoint{BindAddress: "0"},
		Metrics:        &configv1alpha1.MetricsEndpoint{BindAddress: "0"},
		LeaderElection: &componentconfig.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
	}
	if mutate != nil {
		mutate(cfg)
	}
	configv1alpha1.SetDefaults(cfg)
	mgr, err := controllermanager.New(e.Manager.Config, cfg)
	if err != nil {
		return nil, err
	}
	cache, err := controllermanager.Setup(mgr, cfg)
	if err != nil {
		return nil, err
	}
	mgrCtx, cancel := context.WithCancel(context.Background())
	c := &Courier{Namespace: ns.Name, Config: cfg, Cache: cache, cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- mgr.Start(mgrCtx) }()
	return c, nil
}

// Stop stops the manager and waits for it.
func (c *Courier) Stop() error {
	c.cancel()
	select {
	case err := <-c.done:
		return err
	case <-time.After(StopTimeout):
		return errors.New("courier's manager did not stop in time")
	}
}

// KubeconfigSecret writes a Secret in Courier's namespace holding the
// kubeconfig of user on worker, under key "kubeconfig".
func (c *Courier) KubeconfigSecret(ctx context.Context, manager *Cluster, name string, worker *Cluster, user string) error {
	data, err := worker.Kubeconfig(user)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace},
		Data:       map[string][]byte{"kubeconfig": data},
	}
	if err := manager.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating kubeconfig Secret %s: %w", name, err)
	}
	return nil
}
