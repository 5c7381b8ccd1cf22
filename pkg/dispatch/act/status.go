package act

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/metrics"
)

// writeStatus applies Courier's part of the Workload status in one patch,
// guarded by the resourceVersion so that Kueue's concurrent writes are not
// lost, but for a check kept Pending (see PendingPatch). A change without a
// State leaves the check alone: the Workload no longer carries one Courier
// can write.
func (a *Actor) writeStatus(ctx context.Context, wl *kueue.Workload, check kueue.AdmissionCheckReference, s *plan.StatusChange) error {
	version := wl.ResourceVersion
	if patch, ok, err := PendingPatch(wl, check, s); ok || err != nil {
		if err != nil {
			return err
		}
		return a.patchStatus(ctx, wl, version, patch, "keeping the check Pending")
	}
	now := metav1.NewTime(a.Now())
	if s.State != "" {
		state := findCheck(wl, check)
		if state == nil {
			return fmt.Errorf("admission check %q is not on Workload %s/%s", check, wl.Namespace, wl.Name)
		}
		if state.State != s.State {
			state.LastTransitionTime = now
		}
		state.State, state.Message = s.State, s.Message
	}
	wl.Status.ClusterName = s.ClusterName
	wl.Status.NominatedClusterNames = s.Nominated
	if s.Finished != nil {
		cond := *s.Finished
		cond.ObservedGeneration, cond.LastTransitionTime = wl.Generation, now
		meta.SetStatusCondition(&wl.Status.Conditions, cond)
	}
	patch, err := statusPatch(wl, s.State != "", s.Finished != nil)
	if err != nil {
		return err
	}
	return a.patchStatus(ctx, wl, version, patch, "patching Workload status")
}

// patchStatus sends patch to wl's status, read at version.
func (a *Actor) patchStatus(ctx context.Context, wl *kueue.Workload, version string, patch client.Patch, doing string) error {
	if err := a.Client.Status().Patch(ctx, wl, patch); err != nil {
		a.noteConflict(wl, version, err)
		return fmt.Errorf("%s: %w", doing, err)
	}
	a.wroteOver(wl, version)
	return nil
}

// wroteOver remembers that Courier's write replaced version of wl, unless
// the API server stored nothing new: no event follows a write that changed
// nothing, and a pass waiting for one would wait for expect.WrittenTTL.
func (a *Actor) wroteOver(obj metav1.Object, version string) {
	if obj.GetResourceVersion() != version {
		a.Expectations.WroteOver(obj.GetUID(), version, a.Now())
	}
}

// writePlacement records p on the manager Workload, or removes the record
// when p is nil. The write is guarded by the resourceVersion: a decision
// made on an out-of-date Workload, which may not know of a placement made
// a moment ago, is refused and made again.
func (a *Actor) writePlacement(ctx context.Context, wl *kueue.Workload, p *workload.Placement) error {
	version := wl.ResourceVersion
	var record *string // nil: the record goes
	if p != nil {
		data, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encoding placement: %w", err)
		}
		record = ptr.To(string(data))
	}
	patch, err := placementPatch(version, record)
	if err != nil {
		return err
	}
	if err := a.Client.Patch(ctx, wl, patch); err != nil {
		a.noteConflict(wl, version, err)
		return fmt.Errorf("recording the placement: %w", err)
	}
	a.wroteOver(wl, version)
	if p != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Placing workload", "cluster", p.Cluster, "evictions", p.Evictions)
		metrics.Placed(p.Cluster)
	}
	return nil
}

// writeMoves records the moves on wl.
func (a *Actor) writeMoves(ctx context.Context, wl *kueue.Workload, moves []workload.Move) error {
	data, err := json.Marshal(moves)
	if err != nil {
		return fmt.Errorf("encoding moves: %w", err)
	}
	version := wl.ResourceVersion
	patch, err := movesPatch(version, string(data))
	if err != nil {
		return err
	}
	if err := a.Client.Patch(ctx, wl, patch); err != nil {
		a.noteConflict(wl, version, err)
		return fmt.Errorf("recording the moves: %w", err)
	}
	a.wroteOver(wl, version)
	return nil
}

// noteConflict remembers that a write on version of wl was refused for a
// conflict: someone wrote a newer version, which the next pass waits for.
// Kueue's newer version may change nothing a plan reads (the PodsReady it
// sets as a job starts, say): its event must queue that pass all the same.
func (a *Actor) noteConflict(wl *kueue.Workload, version string, err error) {
	if apierrors.IsConflict(err) {
		a.Expectations.WroteOver(wl.UID, version, a.Now())
	}
}

// findCheck returns the state of the named admission check, or nil.
func findCheck(wl *kueue.Workload, name kueue.AdmissionCheckReference) *kueue.AdmissionCheckState {
	for i := range wl.Status.AdmissionChecks {
		if wl.Status.AdmissionChecks[i].Name == name {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}
