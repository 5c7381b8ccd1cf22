package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
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
		if !isTrue(wl.Status.Conditions, kueue.WorkloadFinished) && needs(wl, c) {
			placed.Insert(client.ObjectKeyFromObject(wl))
		}
	}
	remote, err := r.remotes.Get(c)
	if err != nil || !remote.Serves(workloadGVK) {
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
		case err == nil && isCopyOf(&copies.Items[i], wl):
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
	p, err := placementOf(wl)
	return err == nil && p != nil && p.Cluster == c
}

// Release deletes what Courier created on worker c and still holds,
// releasing its finalizers, so that nothing of Courier's is left stuck
// there once its WorkerCluster goes. A worker out of reach is left as it
// is: there is nothing Courier can do for it.
func (r *Reconciler) Release(ctx context.Context, c string) error {
	remote, err := r.remotes.Get(c)
	if err != nil {
		return nil
	}
	var objs []client.Object
	if remote.Serves(workloadGVK) {
		copies := &kueue.WorkloadList{}
		if err := remote.Client.List(ctx, copies); err != nil {
			return fmt.Errorf("listing Workload copies on %s: %w", c, err)
		}
		for i := range copies.Items {
			objs = append(objs, &copies.Items[i])
		}
	}
	for _, gvk := range r.copyKinds() {
		items, err := listRemote(ctx, remote, gvk)
		if err != nil {
			return fmt.Errorf("listing %s copies on %s: %w", gvk.Kind, c, err)
		}
		for i := range items {
			objs = append(objs, &items[i])
		}
	}
	var errs []error
	for _, obj := range objs {
		if obj.GetLabels()[courier.OriginLabel] != r.opts.Origin {
			continue
		}
		if err := r.release(ctx, remote, obj); err != nil {
			errs = append(errs, fmt.Errorf("releasing %s %s/%s on %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), c, err))
			continue
		}
		r.exp.Deleted(obj.GetUID(), r.now())
	}
	return errors.Join(errs...)
}

func sortedKeys(s sets.Set[types.NamespacedName]) []types.NamespacedName {
	keys := s.UnsortedList()
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return keys
}
