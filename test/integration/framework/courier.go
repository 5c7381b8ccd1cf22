package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/controllermanager"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
)

// Courier is Courier's manager running in the test process against the
// environment's manager cluster, exactly as cmd/courier sets it up.
type Courier struct {
	// Namespace is Courier's namespace on the manager cluster.
	Namespace string
	Config    *configv1alpha1.Configuration
	// Cache holds the worker connections.
	Cache *cluster.Cache

	// workerRules are the extra rules ConnectWorkers grants on workers.
	workerRules []rbacv1.PolicyRule
	cancel      context.CancelFunc
	done        chan error
}

// StartCourier creates a namespace for Courier and starts its manager with
// leader election, probes and metrics off, as CourierUser with the shipped
// ManagerRBAC and the rules docs/external-frameworks.md asks for. mutate
// adjusts the configuration before defaults apply.
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
	managerRules, workerRules, err := e.frameworkRules(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.Manager.grantCourier(ctx, e.RepoRoot, ManagerRBAC, ns.Name, managerRules); err != nil {
		return nil, err
	}
	// As in a cluster: an in-cluster config has no client timeout, and
	// Courier's watches decode and count their events only without one.
	restConfig := e.Manager.RestConfig(CourierUser)
	restConfig.Timeout = 0
	mgr, err := controllermanager.New(restConfig, cfg, controllermanager.Flags{})
	if err != nil {
		return nil, err
	}
	cache, err := controllermanager.Setup(mgr, cfg)
	if err != nil {
		return nil, err
	}
	mgrCtx, cancel := context.WithCancel(context.Background())
	c := &Courier{Namespace: ns.Name, Config: cfg, Cache: cache, workerRules: workerRules, cancel: cancel, done: make(chan error, 1)}
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

// ConnectWorkers grants CourierUser the shipped WorkerRBAC on every worker
// of env, creates a kubeconfig Secret for it and a WorkerCluster named as
// the worker, and waits until Courier holds a working connection to each.
// It returns their names.
func (c *Courier) ConnectWorkers(ctx context.Context, env *Environment) ([]string, error) {
	var names []string
	for _, worker := range env.Workers {
		if err := c.GrantWorker(ctx, env, worker); err != nil {
			return nil, err
		}
		if err := c.KubeconfigSecret(ctx, env.Manager, worker.Name, worker, CourierUser); err != nil {
			return nil, err
		}
		if err := env.Manager.Client.Create(ctx, couriertesting.MakeWorkerCluster(worker.Name).Obj()); err != nil {
			return nil, fmt.Errorf("creating WorkerCluster %s: %w", worker.Name, err)
		}
		names = append(names, worker.Name)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			_, err := c.Cache.Get(name)
			return err == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for worker %s to connect: %w", name, err)
		}
	}
	return names, nil
}

// GrantWorker grants CourierUser the shipped WorkerRBAC on worker, with the
// rules the external frameworks need.
func (c *Courier) GrantWorker(ctx context.Context, env *Environment, worker *Cluster) error {
	return worker.grantCourier(ctx, env.RepoRoot, WorkerRBAC, "", c.workerRules)
}

// CreateCheck creates a DispatchPolicy over clusters with a strategy and a
// Courier AdmissionCheck named check that uses it.
func (c *Courier) CreateCheck(ctx context.Context, env *Environment, check, policy string, strategy courier.DispatchStrategy, clusters []string) error {
	if err := env.Manager.Client.Create(ctx, &courier.DispatchPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec:       courier.DispatchPolicySpec{Clusters: clusters, Strategy: strategy},
	}); err != nil {
		return fmt.Errorf("creating DispatchPolicy: %w", err)
	}
	if err := env.Manager.Client.Create(ctx, AdmissionCheck(check, policy)); err != nil {
		return fmt.Errorf("creating AdmissionCheck: %w", err)
	}
	return nil
}

// AdmissionCheck returns a Courier AdmissionCheck naming a DispatchPolicy.
func AdmissionCheck(name, policy string) *kueue.AdmissionCheck {
	return &kueue.AdmissionCheck{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.AdmissionCheckSpec{
			ControllerName: courier.ControllerName,
			Parameters: &kueue.AdmissionCheckParametersReference{
				APIGroup: courier.GroupVersion.Group, Kind: "DispatchPolicy", Name: policy,
			},
		},
	}
}
