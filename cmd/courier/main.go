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
	logOpts := zap.Options{}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	logger := zap.New(zap.UseFlagOptions(&logOpts))
	ctrl.SetLogger(logger)
	// client-go and leader election log through klog; send them the same way.
	klog.SetLogger(logger)
	log := ctrl.Log.WithName("setup")

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
	log.Info("Starting manager", "origin", cfg.Origin, "namespace", cfg.Namespace)
	return mgr.Start(ctrl.SetupSignalHandler())
}
