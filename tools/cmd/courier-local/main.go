// Command courier-local runs a local multi-cluster environment with the
// real peers: a manager and workers as kwokctl clusters with simulated GPU
// nodes, Kueue, Trainer and JobSet as processes, and Courier on the manager.
//
//	courier-local up      start everything and configure dispatch
//	courier-local demo    submit a TrainJob and narrate its dispatch
//	courier-local configure  set up queues, runtime and dispatch on clusters
//	                      whose kubeconfigs are <dir>/<cluster>.kubeconfig (kind)
//	courier-local status  show the processes and their logs
//	courier-local logs    copy every log into a folder
//	courier-local stop NAME / start NAME   stop or start one cluster's control plane;
//	                      start also starts its fence again if it exited
//	courier-local down    stop exactly what up started
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/courierdev/courier/tools/localcluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "courier-local: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("courier-local", flag.ContinueOnError)
	dir := fs.String("dir", "_output/local", "Folder of the environment: kubeconfigs, logs, state.")
	bin := fs.String("bin", "bin", "Folder of the binaries built by `make e2e-binaries build`.")
	workers := fs.Int("workers", 2, "Number of worker clusters.")
	out := fs.String("out", "_output/logs", "Folder the logs command copies logs into.")
	logLevel := fs.Int("courier-log-level", 0, "Courier's log verbosity (up): 2 logs lifecycle steps, 4 every reconcile's plan.")
	fence := fs.Bool("fence", false, "Run bin/courier-fence on every worker and Courier under the Fenced lost-worker policy, as the soak does (up, demo).")
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: courier-local up|demo|status|logs|stop|start|down [flags] [cluster]")
	}
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	absBin, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	opts := localcluster.Options{Dir: absDir, Bin: absBin, Workers: *workers, GPUNodes: 2, GPUsPerNode: 8, CourierLogLevel: *logLevel, Fence: *fence}
	logf := func(format string, args ...any) {
		fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}

	switch os.Args[1] {
	case "up":
		start := time.Now()
		env, err := localcluster.Up(ctx, opts, logf)
		if err != nil {
			return err
		}
		if err := localcluster.StartCourierAndConfigure(ctx, env, logf); err != nil {
			return err
		}
		logf("Up in %s. Look around with:", time.Since(start).Round(time.Second))
		for _, c := range append([]string{env.Manager}, env.Workers...) {
			fmt.Printf("    kubectl --kubeconfig %s get clusterqueues,workloads -A\n", env.Kubeconfig(c))
		}
		return nil
	case "demo":
		return localcluster.Demo(ctx, opts, logf)
	case "configure":
		env := &localcluster.Env{Options: opts, Manager: "manager"}
		for i := range *workers {
			env.Workers = append(env.Workers, fmt.Sprintf("worker-%d", i+1))
		}
		return env.Configure(ctx)
	case "status":
		s, err := localcluster.Status(absDir)
		if err != nil {
			return err
		}
		fmt.Print(s)
		return nil
	case "logs":
		return localcluster.CollectLogs(absDir, *out)
	case "down":
		return localcluster.Down(ctx, absDir, absBin)
	case "stop", "start":
		if fs.NArg() != 1 {
			return fmt.Errorf("%s takes one cluster name", os.Args[1])
		}
		if os.Args[1] == "stop" {
			return localcluster.StopCluster(ctx, absDir, absBin, fs.Arg(0))
		}
		if err := localcluster.StartCluster(ctx, absDir, absBin, fs.Arg(0)); err != nil {
			return err
		}
		// A fence that exited without its API server is started again, as
		// a kubelet would.
		started, err := localcluster.StartFenceIfDown(absDir, fs.Arg(0))
		if started {
			logf("Started the fence on %s again", fs.Arg(0))
		}
		return err
	default:
		return fmt.Errorf("unknown command %q; use up, demo, status, logs, stop, start or down", os.Args[1])
	}
}
