package act

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// openPreemptionGate lets the worker the plan names preempt for the
// workload.
func openPreemptionGate(ctx context.Context, a *Actor, p *pass) (bool, error) {
	c := p.Plan.OpenGate
	if c == "" {
		return false, nil
	}
	if err := a.openGate(ctx, c, p.wl); err != nil {
		return true, fmt.Errorf("opening the preemption gate on %s: %w", c, err)
	}
	return false, nil
}

// openGate opens Courier's preemption gate in the status of wl's copy on
// worker c, as the worker's Kueue lists it, guarded by the copy's
// resourceVersion: a copy changed since the informer read it is planned
// again.
func (a *Actor) openGate(ctx context.Context, c string, wl *kueue.Workload) error {
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return nil // Not connected now; the next plan will see it.
	}
	base := &kueue.Workload{}
	if err := remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), base); err != nil {
		return client.IgnoreNotFound(err)
	}
	copy := base.DeepCopy()
	opened := false
	for i := range copy.Status.PreemptionGates {
		if g := &copy.Status.PreemptionGates[i]; g.Name == courier.PreemptionGate && g.Position != kueue.PreemptionGatePositionOpen {
			g.Position, g.LastTransitionTime, opened = kueue.PreemptionGatePositionOpen, metav1.NewTime(a.Now()), true
		}
	}
	if !opened {
		return nil
	}
	err = remote.Client.Status().Patch(ctx, copy, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // Its change brings the next pass.
	}
	return err
}
