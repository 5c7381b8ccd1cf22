// Command courier runs Courier's controllers on the manager cluster.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/courierdev/courier/pkg/config"
	"github.com/courierdev/courier/pkg/controllermanager"
	"github.com/courierdev/courier/pkg/lazylog"
	"github.com/courierdev/courier/pkg/memlimit"
	"github.com/courierdev/courier/pkg/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "courier: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// controller-runtime registers --kubeconfig on flag.CommandLine.
	configPath := flag.String("config", "", "Path to the Configuration file (config.courier.dev/v1alpha1). Empty means all defaults.")
	pprofAddr := flag.String("pprof-bind-address", "", "TCP address to serve net/http/pprof on, for profiling; empty turns it off.")
	showVersion := flag.Bool("version", false, "Print Courier's version and exit.")
	logOpts := zap.Options{}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println("courier", version.Get())
		return nil
	}

	// Most passes write no entry: the values controller-runtime gives each
	// reconcile's logger are encoded only for the entries written.
	logger := lazylog.New(zap.New(zap.UseFlagOptions(&logOpts)))
	ctrl.SetLogger(logger)
	// client-go and leader election log through klog; send them the same way.
	klog.SetLogger(logger)
	log := ctrl.Log.WithName("setup")
	// A collector that knows the container's limit works harder near it
	// instead of the kernel killing Courier at it; an unreadable cgroup
	// file leaves the runtime's default, it does not stop Courier.
	if limit, why, err := memlimit.FromCgroup("/sys/fs/cgroup"); err != nil {
		log.Error(err, "Leaving the Go memory limit unset; set GOMEMLIMIT to choose one")
	} else if limit > 0 {
		log.Info("Setting the Go memory limit", "bytes", limit, "from", why)
	} else {
		log.V(2).Info("Leaving the Go memory limit unset", "reason", why)
	}

	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading manager kubeconfig: %w", err)
	}
	mgr, err := controllermanager.New(restConfig, cfg, controllermanager.Flags{PprofBindAddress: *pprofAddr})
	if err != nil {
		return err
	}
	if _, err := controllermanager.Setup(mgr, cfg); err != nil {
		return err
	}
	log.Info("Starting manager", "version", version.Get().Version, "revision", version.Get().Revision, "origin", cfg.Origin, "namespace", cfg.Namespace)
	return mgr.Start(ctrl.SetupSignalHandler())
}
