package fence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// ReasonFenced is the reason of the event on a Workload the fence
// deactivated.
const ReasonFenced = "Fenced"

// fenceOrigin deactivates every Workload of origin that needsFence, with
// the annotation courier.dev/fenced at now, and records an event on each.
// The list is read from the API server, not a cache, so that a Workload
// created a moment ago is not missed.
func (f *Fence) fenceOrigin(ctx context.Context, recorder events.EventRecorder, origin string, reason Reason, unchanged time.Duration, now time.Time) error {
	list := &kueue.WorkloadList{}
	if err := f.worker.List(ctx, list, client.MatchingLabels{courier.OriginLabel: origin}); err != nil {
		return fmt.Errorf("listing Workloads of origin %s: %w", origin, err)
	}
	patch, err := fencePatch(now)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("Deactivated by the fence: the heartbeat of origin %s has not changed for %s (%s)",
		origin, unchanged.Round(time.Second), reason)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, patchConcurrency)
	)
	for i := range list.Items {
		wl := &list.Items[i]
		if !needsFence(wl) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := f.worker.Patch(ctx, wl, client.RawPatch(types.MergePatchType, patch))
			if apierrors.IsNotFound(err) {
				return
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("deactivating Workload %s/%s: %w", wl.Namespace, wl.Name, err))
				mu.Unlock()
				return
			}
			fencedWorkloads.WithLabelValues(origin).Inc()
			recorder.Eventf(wl, nil, corev1.EventTypeWarning, ReasonFenced, "Deactivate", "%s", note)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fencePatch is the merge patch of just the two fields the fence sets.
func fencePatch(now time.Time) ([]byte, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{courier.FencedAnnotation: now.UTC().Format(time.RFC3339)}},
		"spec":     map[string]any{"active": false},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the fence patch: %w", err)
	}
	return patch, nil
}

// renewLease writes the fence's own Lease: its identity, the time by its
// clock (for people; Courier only sees that it changes), the fenced origins
// and whether it reads the manager.
func (f *Fence) renewLease(ctx context.Context, fenced []string, state ManagerState) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: f.opts.Namespace, Name: courier.FenceLeaseName}
	err := f.worker.Get(ctx, key, lease)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the fence Lease: %w", err)
	}
	create := apierrors.IsNotFound(err)
	if create {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		lease.Spec.AcquireTime = &now
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[courier.FencedOriginsAnnotation] = strings.Join(fenced, ",")
	lease.Annotations[courier.FenceManagerAnnotation] = string(state)
	if ptr.Deref(lease.Spec.HolderIdentity, "") != f.opts.Identity {
		lease.Spec.HolderIdentity = ptr.To(f.opts.Identity)
		lease.Spec.AcquireTime = &now
	}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(leaseDuration / time.Second))
	lease.Spec.RenewTime = &now
	if create {
		err = f.worker.Create(ctx, lease)
	} else {
		err = f.worker.Update(ctx, lease)
	}
	if err != nil {
		return fmt.Errorf("writing the fence Lease: %w", err)
	}
	return nil
}
