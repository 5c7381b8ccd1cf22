package dispatch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// PlacedOn lists the manager Workloads that still need worker c: those
// placed on, dispatched to or nominated for it that have not finished, and,
// while c is connected, any whose copies remain there (a finished
// Workload's copies go only after its final status is mirrored).
func (r *Reconciler) PlacedOn(ctx context.Context, c string) ([]types.NamespacedName, error) {
	list := &kueue.WorkloadList{}
	if err := r.client.List(ctx, list, client.MatchingFields{clustersIndex: c}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Workloads on %s: %w", c, err)
	}
	placed := sets.New[types.NamespacedName]()
	for i := range list.Items {
		wl := &list.Items[i]
		if !meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) && needs(wl, c) {
			placed.Insert(client.ObjectKeyFromObject(wl))
		}
	}
	remote, err := r.remotes.Get(c)
	if err != nil || !remote.Serves(workload.GVK) {
		return sortedKeys(placed), nil
	}
	copies := &kueue.WorkloadList{}
	if err := remote.Client.List(ctx, copies, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Workload copies on %s: %w", c, err)
	}
	for i := range copies.Items {
		key := client.ObjectKeyFromObject(&copies.Items[i])
		wl := &kueue.Workload{}
		switch err := r.client.Get(ctx, key, wl); {
		case err == nil && workload.IsCopyOf(&copies.Items[i], wl):
			placed.Insert(key)
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting Workload %s: %w", key, err)
		}
	}
	return sortedKeys(placed), nil
}

// needs reports whether an unfinished Workload still has business with
// cluster c: nominated there, dispatched there, or placed there by a
// record that Courier has not cleared, whose copies may still be there.
func needs(wl *kueue.Workload, c string) bool {
	if slices.Contains(wl.Status.NominatedClusterNames, c) || (wl.Status.ClusterName != nil && *wl.Status.ClusterName == c) {
		return true
	}
	p, err := workload.PlacementOf(wl)
	return err == nil && p != nil && p.Cluster == c
}

// Release deletes what Courier created on worker c and still holds,
// releasing its finalizers, so that nothing of Courier's is left stuck
// there once its WorkerCluster goes.
func (r *Reconciler) Release(ctx context.Context, c string) error { return r.actor.Release(ctx, c) }

func sortedKeys(s sets.Set[types.NamespacedName]) []types.NamespacedName {
	keys := s.UnsortedList()
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return keys
}
