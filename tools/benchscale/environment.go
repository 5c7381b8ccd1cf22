package benchscale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// The names of what the benchmark creates.
const (
	benchNamespace   = "bench"
	courierNamespace = "courier-system"
	checkName        = "courier"
	policyName       = "bench-workers"
	clusterQueue     = "cq"
	localQueue       = "lq"
)

// environment is one manager and its workers, with audit logs of
// Courier's requests, in a temporary folder of its own.
type environment struct {
	*framework.Environment
	dir string
	// audit holds the manager's log first, then the workers' in order.
	audit []*auditLog
}

// startEnvironment starts a fresh manager and workers, logging Courier's
// requests, and stops what it started if it fails.
func startEnvironment(ctx context.Context, workers int) (*environment, error) {
	dir, err := os.MkdirTemp("", "courier-bench-")
	if err != nil {
		return nil, fmt.Errorf("creating environment folder: %w", err)
	}
	// Cluster names as framework.Start gives them.
	names := []string{"manager"}
	for i := range workers {
		names = append(names, fmt.Sprintf("worker-%d", i+1))
	}
	common, perCluster, logs, err := auditArgs(dir, names)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	fw, err := framework.Start(ctx, framework.Options{
		Workers:              workers,
		Dir:                  filepath.Join(dir, "clusters"),
		APIServerArgs:        common,
		ClusterAPIServerArgs: perCluster,
	})
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	e := &environment{Environment: fw, dir: dir}
	for _, name := range names {
		e.audit = append(e.audit, logs[name])
	}
	return e, nil
}

// stop stops every process by PID and removes the folder, which it keeps
// if a process could not be stopped.
func (e *environment) stop() error {
	if err := e.Stop(); err != nil {
		return err
	}
	if err := os.RemoveAll(e.dir); err != nil {
		return fmt.Errorf("removing %s: %w", e.dir, err)
	}
	return nil
}

// setUp creates the benchmark's namespace everywhere, registers the
// workers for Courier and creates Courier's AdmissionCheck over all of
// them. It returns the workers' names.
func (e *environment) setUp(ctx context.Context) ([]string, error) {
	for _, c := range e.Clusters() {
		if err := c.EnsureNamespace(ctx, benchNamespace); err != nil {
			return nil, err
		}
	}
	names, err := e.RegisterWorkers(ctx, courierNamespace)
	if err != nil {
		return nil, err
	}
	if err := e.Manager.Client.Create(ctx, &courier.DispatchPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec:       courier.DispatchPolicySpec{Clusters: names},
	}); err != nil {
		return nil, fmt.Errorf("creating DispatchPolicy: %w", err)
	}
	if err := e.Manager.Client.Create(ctx, framework.AdmissionCheck(checkName, policyName)); err != nil {
		return nil, fmt.Errorf("creating AdmissionCheck: %w", err)
	}
	return names, nil
}

// waitCheckActive waits until Courier reports its AdmissionCheck Active.
func (e *environment) waitCheckActive(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ac := &kueue.AdmissionCheck{}
		if err := e.Manager.Client.Get(ctx, client.ObjectKey{Name: checkName}, ac); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for AdmissionCheck %s to be Active: %w", checkName, err)
	}
	return nil
}

// auditOffsets marks where a phase starts in each audit log.
func (e *environment) auditOffsets() ([]int64, error) {
	offsets := make([]int64, len(e.audit))
	for i, l := range e.audit {
		var err error
		if offsets[i], err = l.offset(); err != nil {
			return nil, err
		}
	}
	return offsets, nil
}

// auditDropped names the clusters whose API server dropped audit events.
func (e *environment) auditDropped() ([]string, error) {
	var dropped []string
	for _, c := range e.Clusters() {
		d, err := droppedAuditEvents(c)
		if err != nil {
			return nil, err
		}
		if d {
			dropped = append(dropped, c.Name)
		}
	}
	return dropped, nil
}
