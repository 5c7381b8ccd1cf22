package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// gateProbeWait is how long a probe waits for the worker's Kueue to list
// the probe's gate: such a Kueue does so in its first pass over a new
// Workload, within moments.
const gateProbeWait = 15 * time.Second

// PreemptionGates reports whether the worker's Kueue takes preemption
// gates, as the probe on connecting found; false until it has.
func (r *Remote) PreemptionGates() bool {
	return r.gates.Load() == string(courier.PreemptionGatesEnabled)
}

// SetPreemptionGates records whether the worker's Kueue takes preemption
// gates: the probe's finding, or a test's.
func (r *Remote) SetPreemptionGates(s courier.PreemptionGatesState) { r.gates.Store(string(s)) }

// probeGates finds out whether the worker's Kueue takes preemption gates
// (its MultiKueueOrchestratedPreemption feature): only such a Kueue lists
// a Workload's gates in its status. The probe is an inactive Workload
// without Courier's origin label, so that nothing admits, fences or
// collects it; it is deleted once answered. A probe that cannot be made
// leaves the answer unknown, which dispatch takes as Disabled.
func (c *connection) probeGates(ctx context.Context, r *Remote) {
	if c.opts.Heartbeat == nil {
		return
	}
	state, err := probeGates(ctx, r.Client, r.APIReader, c.opts.Heartbeat.Namespace, c.opts.Origin)
	if err != nil {
		return // The WorkerCluster's preemptionGates stays empty: unknown.
	}
	r.SetPreemptionGates(state)
	c.update(func(s *State) { s.PreemptionGates = state })
}

func probeGates(ctx context.Context, w client.Writer, r client.Reader, namespace, origin string) (courier.PreemptionGatesState, error) {
	probe := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "courier-gate-probe-" + origin,
			Labels: map[string]string{courier.GateProbeLabel: origin}},
		Spec: kueue.WorkloadSpec{
			Active:          ptr.To(false),
			PreemptionGates: []kueue.PreemptionGate{{Name: courier.PreemptionGate}},
			PodSets: []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: 1, Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "courier.dev/gate-probe"}}}}}},
		},
	}
	if err := w.Create(ctx, probe); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating the preemption gate probe %s/%s: %w", namespace, probe.Name, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = w.Delete(ctx, probe)
	}()
	state := courier.PreemptionGatesDisabled
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, gateProbeWait, true, func(ctx context.Context) (bool, error) {
		got := &kueue.Workload{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(probe), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if slices.ContainsFunc(got.Status.PreemptionGates, func(g kueue.PreemptionGateState) bool { return g.Name == courier.PreemptionGate }) {
			state = courier.PreemptionGatesEnabled
			return true, nil
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		return "", fmt.Errorf("reading the preemption gate probe %s/%s: %w", namespace, probe.Name, err)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return state, nil
}
