package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/test/integration/framework"
)

// StartCourierAndConfigure configures dispatch, starts the fence on every
// worker if the options ask for it and bin/courier-fence exists, installs Courier's chart on the
// manager with the lost-worker policy that fits (lostWorkerSettings),
// starts Courier as the chart's ServiceAccount with the chart's
// Configuration, and waits until its AdmissionCheck is Active.
func StartCourierAndConfigure(ctx context.Context, env *Env, logf func(string, ...any)) error {
	logf("Creating queues, the training runtime, WorkerClusters, a DispatchPolicy and the AdmissionCheck")
	if err := env.Configure(ctx); err != nil {
		return err
	}
	fenced := env.Fence && FenceAvailable(env.Bin)
	if fenced {
		if err := env.startFences(ctx, logf); err != nil {
			return err
		}
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	lostWorker, policy, err := lostWorkerSettings(root, fenced)
	if err != nil {
		return err
	}
	logf("Courier's lost-worker policy: %s", policy)
	plugin, err := secretReaderSettings(env.Bin, env.courierKubeconfigPath())
	if err != nil {
		return err
	}
	if len(env.CourierValues) > 0 {
		logf("Courier's chart values besides: %s", strings.Join(env.CourierValues, ", "))
	}
	ports, err := framework.FreePorts(3)
	if err != nil {
		return err
	}
	c, err := env.Client(env.Manager)
	if err != nil {
		return err
	}
	logf("Installing Courier's chart on %s, all but its Deployment", env.Manager)
	// A process has no Service to be probed or scraped through: health and
	// metrics on free loopback ports, the metrics one recorded in the state
	// file for benchmarks to find.
	metrics := fmt.Sprintf("127.0.0.1:%d", ports[1])
	chart, err := env.installChart(ctx, c, append([]string{
		fmt.Sprintf("configuration.health.bindAddress=127.0.0.1:%d", ports[0]),
		"configuration.metrics.bindAddress=" + metrics}, append(append(lostWorker, plugin...), env.CourierValues...)...)...)
	if err != nil {
		return err
	}
	webhooks, err := newCourierWebhooks(filepath.Join(env.Dir, env.Manager), ports[2])
	if err != nil {
		return err
	}
	config, err := webhooks.configure(chart.config)
	if err != nil {
		return err
	}
	base, err := os.ReadFile(env.Kubeconfig(env.Manager))
	if err != nil {
		return fmt.Errorf("reading kubeconfig of %s: %w", env.Manager, err)
	}
	kubeconfig, err := serviceAccountKubeconfig(ctx, c, base, CourierNamespace, chartServiceAccount)
	if err != nil {
		return err
	}
	logf("Starting Courier on %s as ServiceAccount %s/%s", env.Manager, CourierNamespace, chartServiceAccount)
	proc, err := env.StartCourier(config, kubeconfig)
	if err != nil {
		return err
	}
	if err := env.recordCourierMetrics(metrics); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !proc.alive() {
			return false, fmt.Errorf("courier exited; see %s", proc.Log)
		}
		ac := &kueue.AdmissionCheck{}
		if err := c.Get(ctx, client.ObjectKey{Name: CheckName}, ac); err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for AdmissionCheck %q to be Active (Courier's log: %s): %w", CheckName, proc.Log, err)
	}
	logf("AdmissionCheck %q is Active: Courier reaches %s", CheckName, strings.Join(env.Workers, ", "))
	logf("Installing Courier's webhook configurations, pointed at the process on port %d", webhooks.port)
	return webhooks.install(ctx, c, chart.webhooks)
}

// Load returns the environment that Up started in opts.Dir.
func Load(opts Options) (*Env, error) {
	state, err := LoadState(opts.Dir)
	if err != nil {
		return nil, err
	}
	if len(state.Clusters) == 0 {
		return nil, fmt.Errorf("no environment is up in %s; run up first", opts.Dir)
	}
	return &Env{Options: opts, Manager: state.Clusters[0], Workers: state.Clusters[1:]}, nil
}

// DemoTrainJob is the sample TrainJob: one node asking for a GPU, with a
// user RuntimePatch that labels its pods. It leaves managedBy to Courier's
// webhook.
func DemoTrainJob(name string) *trainer.TrainJob {
	return &trainer.TrainJob{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace,
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": LocalQueue}},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "torch-distributed"},
			Trainer: &trainer.Trainer{
				NumNodes: ptr.To[int32](1),
				// Extended resources such as GPUs need equal limits.
				ResourcesPerNode: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")},
				},
			},
			RuntimePatches: []trainer.RuntimePatch{{
				Manager: "example.com/user",
				TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
					Metadata: &metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
				}},
			}},
		},
	}
}

// Demo submits the sample TrainJob to the manager and narrates its way
// through Kueue, Courier and the worker until it completes.
func Demo(ctx context.Context, opts Options, logf func(string, ...any)) error {
	env, err := Load(opts)
	if err != nil {
		return err
	}
	mgr, err := env.Client(env.Manager)
	if err != nil {
		return err
	}
	tj := DemoTrainJob("demo-" + time.Now().Format("150405"))
	if err := mgr.Create(ctx, tj); err != nil {
		return fmt.Errorf("submitting TrainJob: %w", err)
	}
	logf("Submitted TrainJob %s/%s to the manager, with a RuntimePatch from example.com/user", tj.Namespace, tj.Name)
	if got := ptr.Deref(tj.Spec.ManagedBy, ""); got != adapter.TrainJobManagedBy {
		return fmt.Errorf("TrainJob %s has spec.managedBy %q, want %q from Courier's webhook: is the webhook configuration installed?", tj.Name, got, adapter.TrainJobManagedBy)
	}
	logf("Courier's webhook set spec.managedBy to %s: the manager's Kueue admits it, the worker runs it", adapter.TrainJobManagedBy)
	n := &narrator{logf: logf, seen: map[string]bool{}}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return n.step(ctx, env, mgr, tj)
	})
	if err != nil {
		return fmt.Errorf("following TrainJob %s (logs: courier-local status): %w", tj.Name, err)
	}
	logf("Done. The clusters keep running; stop them with `make demo-down`.")
	return nil
}

// narrator prints each step of a TrainJob's life once.
type narrator struct {
	logf func(string, ...any)
	seen map[string]bool
}

func (n *narrator) once(key, format string, args ...any) {
	if !n.seen[key] {
		n.seen[key] = true
		n.logf(format, args...)
	}
}

func (n *narrator) step(ctx context.Context, env *Env, mgr client.Client, tj *trainer.TrainJob) (bool, error) {
	wl := &kueue.Workload{}
	if err := mgr.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: "trainjob-" + tj.Name}, wl); err != nil {
		list := &kueue.WorkloadList{}
		if err := mgr.List(ctx, list, client.InNamespace(tj.Namespace)); err != nil {
			return false, nil
		}
		i := slices.IndexFunc(list.Items, func(w kueue.Workload) bool {
			ref := metav1.GetControllerOf(&w)
			return ref != nil && ref.UID == tj.UID
		})
		if i < 0 {
			return false, nil
		}
		wl = &list.Items[i]
	}
	n.once("workload", "Manager: Kueue created Workload %s", wl.Name)
	if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
		n.once("quota", "Manager: Kueue reserved quota in ClusterQueue %q; Courier's check is now in charge", ClusterQueue)
	}
	for _, c := range wl.Status.AdmissionChecks {
		if c.Name == CheckName && c.Message != "" {
			n.once("check/"+string(c.State)+c.Message, "Manager: admission check %s: %s", c.State, c.Message)
		}
	}
	if wl.Status.ClusterName == nil {
		return false, nil
	}
	worker := *wl.Status.ClusterName
	wc, err := env.Client(worker)
	if err != nil {
		return false, err
	}
	remote := &trainer.TrainJob{}
	if err := wc.Get(ctx, client.ObjectKeyFromObject(tj), remote); err == nil {
		var managers []string
		for _, p := range remote.Spec.RuntimePatches {
			managers = append(managers, p.Manager)
		}
		n.once("remote", "%s: TrainJob created by Courier (origin %q); RuntimePatches from: %s", worker,
			remote.Labels[courier.OriginLabel], strings.Join(managers, ", "))
		if remote.Spec.Suspend != nil && !*remote.Spec.Suspend {
			n.once("unsuspended", "%s: the worker's Kueue admitted it and unsuspended it", worker)
		}
	}
	js := &jobset.JobSet{}
	if err := wc.Get(ctx, client.ObjectKeyFromObject(tj), js); err == nil {
		n.once("jobset", "%s: Trainer created JobSet %s", worker, js.Name)
	}
	pods := &corev1.PodList{}
	if err := wc.List(ctx, pods, client.InNamespace(tj.Namespace), client.MatchingLabels{"jobset.sigs.k8s.io/jobset-name": tj.Name}); err == nil {
		for _, p := range pods.Items {
			n.once("pod/"+p.Name+string(p.Status.Phase), "%s: pod %s on node %s is %s", worker, p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
	local := &trainer.TrainJob{}
	if err := mgr.Get(ctx, client.ObjectKeyFromObject(tj), local); err == nil {
		for _, c := range local.Status.Conditions {
			if c.Status == metav1.ConditionTrue {
				n.once("status/"+c.Type, "Manager: TrainJob status mirrored from %s: %s (%s)", worker, c.Type, c.Message)
			}
		}
	}
	if fin := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished); fin != nil && fin.Status == metav1.ConditionTrue {
		n.once("finished", "Manager: Workload finished: %s: %s", fin.Reason, fin.Message)
		return true, nil
	}
	return false, nil
}
