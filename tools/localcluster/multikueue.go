package localcluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"
)

// Names of what ConfigureMultiKueue creates.
const (
	// MultiKueueCheckName is the AdmissionCheck of Kueue's own MultiKueue.
	MultiKueueCheckName = "multikueue"
	// MultiKueueControllerName is MultiKueue's AdmissionCheck controller.
	MultiKueueControllerName = "kueue.x-k8s.io/multikueue"
	// KueueNamespace is where the manager's Kueue, with its default
	// Configuration, reads the MultiKueueClusters' kubeconfig Secrets.
	KueueNamespace = "kueue-system"
	// KueueProcess is the name the manager's Kueue is recorded under.
	KueueProcess           = "manager/kueue"
	multiKueueConfigName   = "all-workers"
	multiKueueWorkerRole   = "multikueue-worker"
	multiKueueSecretSuffix = "-multikueue"
)

// multiKueueWorkerRBAC adds to WorkerUser's role what MultiKueue does and
// Courier does not: update Workloads and their status, and TrainJobs. The
// identity stays the same, so that the audit logs count both alike.
func multiKueueWorkerRBAC() []client.Object {
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: multiKueueWorkerRole}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{kueue.SchemeGroupVersion.Group}, Resources: []string{"workloads", "workloads/status"}, Verbs: verbs},
			{APIGroups: []string{"trainer.kubeflow.org"}, Resources: []string{"trainjobs", "trainjobs/status"}, Verbs: verbs},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs", "jobs/status"}, Verbs: verbs},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: multiKueueWorkerRole},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: multiKueueWorkerRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: CourierNamespace, Name: workerServiceAccount}}},
	}
}

// ConfigureMultiKueue sets up Kueue's own MultiKueue on the manager beside
// Courier, after Configure: a MultiKueueCluster per worker whose kubeconfig
// Secret, in Kueue's namespace, holds a token of WorkerUser, a
// MultiKueueConfig over every worker, and AdmissionCheck
// MultiKueueCheckName. The ClusterQueue keeps Courier's check; UseCheck
// switches it. It waits until the check and every cluster are Active.
func (e *Env) ConfigureMultiKueue(ctx context.Context) error {
	mgr, err := e.Client(e.Manager)
	if err != nil {
		return err
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}}
	for _, w := range e.Workers {
		wc, err := e.Client(w)
		if err != nil {
			return err
		}
		for _, obj := range multiKueueWorkerRBAC() {
			if err := wc.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), w, err)
			}
		}
		base, err := os.ReadFile(e.courierKubeconfig(w))
		if err != nil {
			return fmt.Errorf("reading kubeconfig of %s: %w", w, err)
		}
		kubeconfig, err := serviceAccountKubeconfig(ctx, wc, base, CourierNamespace, workerServiceAccount)
		if err != nil {
			return err
		}
		objs = append(objs,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: w + multiKueueSecretSuffix, Namespace: KueueNamespace},
				Data: map[string][]byte{"kubeconfig": kubeconfig}},
			&kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: w},
				Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{
					KubeConfig: &kueue.KubeConfig{LocationType: kueue.SecretLocationType, Location: w + multiKueueSecretSuffix}}}})
	}
	objs = append(objs,
		&kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: multiKueueConfigName},
			Spec: kueue.MultiKueueConfigSpec{Clusters: e.Workers}},
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: MultiKueueCheckName},
			Spec: kueue.AdmissionCheckSpec{ControllerName: MultiKueueControllerName,
				Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: kueue.SchemeGroupVersion.Group, Kind: "MultiKueueConfig", Name: multiKueueConfigName}}})
	for _, obj := range objs {
		if err := mgr.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), e.Manager, err)
		}
	}
	return e.waitMultiKueueActive(ctx, mgr)
}

// WorkerUserConfig is a config of worker as WorkerUser, the identity
// dispatchers use there, from the kubeconfig Secret ConfigureMultiKueue
// made for it.
func (e *Env) WorkerUserConfig(ctx context.Context, worker string) (*rest.Config, error) {
	mgr, err := e.Client(e.Manager)
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := mgr.Get(ctx, client.ObjectKey{Namespace: KueueNamespace, Name: worker + multiKueueSecretSuffix}, secret); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of %s as %s: %w", worker, WorkerUser, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of %s as %s: %w", worker, WorkerUser, err)
	}
	// RESTConfig's limits: client-go's default of 5 requests a second
	// would pace whatever uses this config.
	cfg.QPS, cfg.Burst = restQPS, restBurst
	return cfg, nil
}

// waitMultiKueueActive waits until MultiKueue reaches every worker and its
// AdmissionCheck is Active.
func (e *Env) waitMultiKueueActive(ctx context.Context, mgr client.Client) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, w := range e.Workers {
			mkc := &kueue.MultiKueueCluster{}
			if err := mgr.Get(ctx, client.ObjectKey{Name: w}, mkc); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if c := meta.FindStatusCondition(mkc.Status.Conditions, kueue.MultiKueueClusterActive); c == nil || c.Status != metav1.ConditionTrue {
				why = fmt.Sprintf("MultiKueueCluster %s not Active: %v", w, c)
				return false, nil
			}
		}
		ac := &kueue.AdmissionCheck{}
		if err := mgr.Get(ctx, client.ObjectKey{Name: MultiKueueCheckName}, ac); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if c := meta.FindStatusCondition(ac.Status.Conditions, kueue.AdmissionCheckActive); c == nil || c.Status != metav1.ConditionTrue {
			why = fmt.Sprintf("AdmissionCheck %s not Active: %v", MultiKueueCheckName, c)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for MultiKueue to be active (%s; manager Kueue's log %s): %w", why, e.kueueLog(), err)
	}
	return nil
}

// UseCheck points the manager's ClusterQueue at one AdmissionCheck only,
// to switch dispatchers between runs.
func (e *Env) UseCheck(ctx context.Context, check string) error {
	mgr, err := e.Client(e.Manager)
	if err != nil {
		return err
	}
	cq := &kueue.ClusterQueue{}
	if err := mgr.Get(ctx, client.ObjectKey{Name: ClusterQueue}, cq); err != nil {
		return fmt.Errorf("getting ClusterQueue %s: %w", ClusterQueue, err)
	}
	patch := client.MergeFrom(cq.DeepCopy())
	cq.Spec.AdmissionChecksStrategy = &kueue.AdmissionChecksStrategy{
		AdmissionChecks: []kueue.AdmissionCheckStrategyRule{{Name: kueue.AdmissionCheckReference(check)}},
	}
	if err := mgr.Patch(ctx, cq, patch); err != nil {
		return fmt.Errorf("pointing ClusterQueue %s at AdmissionCheck %s: %w", ClusterQueue, check, err)
	}
	return nil
}

// binary is the binary the recorded process name runs now.
func (e *Env) binary(name string) (string, error) {
	state, err := LoadState(e.Dir)
	if err != nil {
		return "", err
	}
	p, err := state.process(name)
	if err != nil {
		return "", err
	}
	return p.Args[0], nil
}

// RestartManagerKueue stops the manager's Kueue by PID and starts binary
// in its place, with the same Configuration, kubeconfig and ports, and
// waits until it serves. The webhook configurations still point at it.
func (e *Env) RestartManagerKueue(ctx context.Context, binary string) (*Process, error) {
	return e.RunManagerKueue(ctx, binary, "")
}

// respawn stops the recorded process name by PID and starts it again with
// the arguments argsFor makes of its old ones, the same environment and
// log, records it, and waits until it serves on the ports its old
// arguments give. A process that exits before it serves is returned with
// the error, for its log.
func (e *Env) respawn(ctx context.Context, name string, portsOf func(args []string) (ports, error), argsFor func(old []string) []string) (*Process, error) {
	state, err := LoadState(e.Dir)
	if err != nil {
		return nil, err
	}
	old, err := state.process(name)
	if err != nil {
		return nil, err
	}
	p, err := portsOf(old.Args)
	if err != nil {
		return nil, err
	}
	if err := old.stop(10 * time.Second); err != nil {
		return nil, err
	}
	if err := waitGone(old, 10*time.Second); err != nil {
		return nil, err
	}
	proc, err := spawn(name, old.Log, os.O_APPEND, old.Env, argsFor(old.Args)...)
	if err != nil {
		return nil, err
	}
	*old = *proc
	if err := state.save(e.Dir); err != nil {
		return nil, err
	}
	return proc, waitServing(ctx, proc, p)
}

// withBinary makes a command line run binary in place of its first
// argument, and read the configuration file config where config is set.
func withBinary(binary, config string) func(old []string) []string {
	return func(old []string) []string {
		args := append([]string{binary}, old[1:]...)
		for i := range args {
			if config != "" && args[i] == "--config" && i+1 < len(args) {
				args[i+1] = config
			}
		}
		return args
	}
}

// kueuePorts reads the health and webhook ports from the Configuration
// file a Kueue command line names.
func kueuePorts(args []string) (ports, error) {
	return configPorts("Kueue", args, "healthProbeBindAddress")
}

// configPorts reads the webhook port, webhook.port, and the health port,
// of the address at health.<healthKey>, from the configuration file named
// by a command line's --config.
func configPorts(program string, args []string, healthKey string) (ports, error) {
	data, err := os.ReadFile(configFlag(args))
	if err != nil {
		return ports{}, fmt.Errorf("reading %s's configuration: %w", program, err)
	}
	var cfg struct {
		Webhook struct {
			Port int `json:"port"`
		} `json:"webhook"`
		Health map[string]any `json:"health"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return ports{}, fmt.Errorf("decoding %s's configuration: %w", program, err)
	}
	address, _ := cfg.Health[healthKey].(string)
	_, port, _ := strings.Cut(address, ":")
	health, err := strconv.Atoi(port)
	if err != nil {
		return ports{}, fmt.Errorf("parsing %s's health address %q (health.%s): %w", program, address, healthKey, err)
	}
	return ports{webhook: cfg.Webhook.Port, health: health}, nil
}

func (e *Env) kueueLog() string {
	return e.Dir + "/" + e.Manager + "/kueue/kueue.log"
}

// ComponentPIDs are the PIDs kwokctl recorded for a cluster's components,
// by component: kube-apiserver, etcd, kube-controller-manager,
// kube-scheduler, kwok-controller.
func (e *Env) ComponentPIDs(cluster string) (map[string]int, error) {
	entries, err := os.ReadDir(e.KwokWorkdir(cluster) + "/pids")
	if err != nil {
		return nil, fmt.Errorf("listing the PIDs of %s: %w", cluster, err)
	}
	out := map[string]int{}
	for _, en := range entries {
		name, ok := strings.CutSuffix(en.Name(), ".pid")
		if !ok {
			continue
		}
		pid, err := componentPID(e.Dir, cluster, name)
		if err != nil {
			return nil, err
		}
		out[name] = pid
	}
	return out, nil
}

// ProcessPIDs are the PIDs of the processes the environment started
// besides kwokctl's, by recorded name.
func (e *Env) ProcessPIDs() (map[string]int, error) {
	state, err := LoadState(e.Dir)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range state.Processes {
		out[p.Name] = p.PID
	}
	return out, nil
}
