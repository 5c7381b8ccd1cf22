package observe

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// checkRef is Courier's admission check on a Workload: its state, and the
// AdmissionCheck object behind it, nil when that object is gone.
type checkRef struct {
	state *kueue.AdmissionCheckState
	ac    *kueue.AdmissionCheck
	// missing names the checks on the Workload whose AdmissionCheck object
	// does not exist; one of them may have been Courier's.
	missing []string
}

// courierCheck finds Courier's admission check on a Workload.
func (ob *Observer) courierCheck(ctx context.Context, wl *kueue.Workload) (checkRef, error) {
	var ref checkRef
	for i := range wl.Status.AdmissionChecks {
		state := &wl.Status.AdmissionChecks[i]
		ac := &kueue.AdmissionCheck{}
		if err := ob.Client.Get(ctx, client.ObjectKey{Name: string(state.Name)}, ac); err != nil {
			if !apierrors.IsNotFound(err) {
				return ref, fmt.Errorf("getting AdmissionCheck: %w", err)
			}
			ref.missing = append(ref.missing, string(state.Name))
			continue
		}
		if ac.Spec.ControllerName == courier.ControllerName {
			return checkRef{state: state, ac: ac}, nil
		}
	}
	return ref, nil
}

// adopt decides whether a Workload whose Courier AdmissionCheck cannot be
// found is still Courier's: it is if Courier placed it or holds copies of
// it. Then the one check whose AdmissionCheck is missing is taken to be
// Courier's, and the Workload goes on being mirrored and finished.
func (ob *Observer) adopt(ctx context.Context, wl *kueue.Workload, ref checkRef, record *workload.Placement) (checkRef, bool, error) {
	if ref.ac != nil {
		return ref, true, nil
	}
	ours := record != nil
	if !ours {
		var err error
		if ours, err = ob.hasCopies(ctx, wl); err != nil {
			return ref, false, err
		}
	}
	if ours && len(ref.missing) == 1 {
		ref.state = findCheck(wl, kueue.AdmissionCheckReference(ref.missing[0]))
	}
	return ref, ours, nil
}

// missingMessage reports an AdmissionCheck that is gone.
func (ref checkRef) missingMessage() string {
	if ref.ac != nil {
		return ""
	}
	if ref.state != nil {
		return fmt.Sprintf("AdmissionCheck %q no longer exists; Courier goes on mirroring what runs and dispatches nothing new for this workload. Re-create it to go on.", ref.state.Name)
	}
	return "Courier's AdmissionCheck is no longer on this workload; Courier goes on mirroring what runs and dispatches nothing new for it."
}

// hasCopies reports whether any connected worker holds a Workload copy of
// wl.
func (ob *Observer) hasCopies(ctx context.Context, wl *kueue.Workload) (bool, error) {
	for _, name := range ob.Remotes.Names() {
		remote, err := ob.Remotes.Get(name)
		if err != nil || !remote.Serves(workload.GVK) {
			continue
		}
		copy := &kueue.Workload{}
		err = remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), copy)
		switch {
		case err == nil && workload.IsCopyOf(copy, wl):
			return true, nil
		case err != nil && !apierrors.IsNotFound(err):
			return false, fmt.Errorf("reading the Workload copy on %s: %w", name, err)
		}
	}
	return false, nil
}
