// Command courier-fence runs on a worker cluster and stops the copies of a
// Courier manager whose heartbeat has stopped there (docs/fence.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/fence"
)

// leaderElectionID is the Lease, in the fence's namespace, that lets one
// replica run while another waits.
const leaderElectionID = "courier-fence-leader"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "courier-fence: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// controller-runtime registers --kubeconfig on flag.CommandLine: the
	// worker's API server, in-cluster when empty.
	namespace := flag.String("namespace", configv1alpha1.DefaultFenceNamespace, "Namespace of Courier's heartbeat Leases, the fence's Lease and its leader election.")
	pollInterval := flag.Duration("poll-interval", fence.DefaultPollInterval, "How often to list the heartbeat Leases; at most 1s.")
	managerKubeconfig := flag.String("manager-kubeconfig", "", "Kubeconfig file of the manager cluster, where the fence reads its WorkerCluster; empty means no manager.")
	workerCluster := flag.String("worker-cluster", "", "Name of the WorkerCluster that stands for this worker on the manager; required with --manager-kubeconfig.")
	identity := flag.String("identity", "", "Holder identity of the fence's Lease; empty means the host name (the pod's name).")
	probeAddr := flag.String("health-probe-bind-address", ":8081", "TCP address of /healthz and /readyz; \"0\" disables them.")
	metricsAddr := flag.String("metrics-bind-address", ":8080", "TCP address of /metrics; \"0\" disables it.")
	logOpts := zap.Options{}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	logger := zap.New(zap.UseFlagOptions(&logOpts))
	ctrl.SetLogger(logger)
	// client-go and leader election log through klog; send them the same way.
	klog.SetLogger(logger)

	if (*managerKubeconfig == "") != (*workerCluster == "") {
		return errors.New("--manager-kubeconfig and --worker-cluster go together: give both, or neither to run without the manager")
	}
	// Courier's margin (MinFencedLostTimeout) counts on the fence seeing a
	// renewal within a second of it.
	if *pollInterval <= 0 || *pollInterval > fence.DefaultPollInterval {
		return fmt.Errorf("--poll-interval %s: want more than 0 and at most %s, which Courier's lost-worker margin counts on", *pollInterval, fence.DefaultPollInterval)
	}
	if *identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("reading the host name for --identity: %w", err)
		}
		*identity = host
	}
	workerConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the worker kubeconfig: %w", err)
	}
	var managerConfig *rest.Config
	if *managerKubeconfig != "" {
		if managerConfig, err = clientcmd.BuildConfigFromFlags("", *managerKubeconfig); err != nil {
			return fmt.Errorf("loading --manager-kubeconfig: %w", err)
		}
	}
	f, err := fence.New(workerConfig, managerConfig, fence.Options{
		Namespace:     *namespace,
		PollInterval:  *pollInterval,
		Identity:      *identity,
		WorkerCluster: *workerCluster,
	})
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(workerConfig, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:        *probeAddr,
		LeaderElection:                true,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       *namespace,
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := mgr.Add(f); err != nil {
		return fmt.Errorf("adding the fence: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the liveness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("Starting the fence's manager", "namespace", *namespace, "identity", *identity, "workerCluster", *workerCluster)
	return mgr.Start(ctrl.SetupSignalHandler())
}
