package localcluster

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

// CourierBinary is the binary the manager's first Courier runs now.
func (e *Env) CourierBinary() (string, error) {
	return e.binary(CourierProcess)
}

// RestartCourier stops the manager's first Courier by PID and starts
// binary in its place, with the same configuration, kubeconfig and ports,
// and waits until it serves and holds the leader Lease: jobs submitted
// before would wait on the election. One environment can so run two
// builds of Courier in turn.
func (e *Env) RestartCourier(ctx context.Context, binary string) (*Process, error) {
	mgr, err := e.Client(e.Manager)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: CourierNamespace, Name: configv1alpha1.DefaultLeaderElectionID}
	before, err := leaseHolder(ctx, mgr, key)
	if err != nil {
		return nil, err
	}
	proc, err := e.respawn(ctx, CourierProcess, binary, courierPorts)
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !proc.alive() {
			return false, fmt.Errorf("%s exited; see %s", proc.Name, proc.Log)
		}
		holder, err := leaseHolder(ctx, mgr, key)
		return holder != "" && holder != before, err
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %s to hold Lease %s (log: %s): %w", proc.Name, key, proc.Log, err)
	}
	return proc, nil
}

// leaseHolder is the identity holding the Lease key, "" when none does.
func leaseHolder(ctx context.Context, c client.Client, key client.ObjectKey) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, key, lease); err != nil {
		return "", fmt.Errorf("reading Lease %s: %w", key, err)
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// courierPorts reads the health and webhook ports from the configuration
// file a Courier command line names.
func courierPorts(args []string) (ports, error) {
	return configPorts("Courier", args, "bindAddress")
}
