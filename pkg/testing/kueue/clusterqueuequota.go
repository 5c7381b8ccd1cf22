package kueue

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Quota adds a resource group of one flavor with a nominal quota of one
// resource.
func (w *ClusterQueueWrapper) Quota(flavor string, res corev1.ResourceName, nominal string) *ClusterQueueWrapper {
	w.Spec.ResourceGroups = append(w.Spec.ResourceGroups, kueue.ResourceGroup{
		CoveredResources: []corev1.ResourceName{res},
		Flavors: []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(flavor), Resources: []kueue.ResourceQuota{{
			Name: res, NominalQuota: resource.MustParse(nominal),
		}}}},
	})
	return w
}

// Flavor adds a resource group of one flavor covering every resource of
// nominal, with its quota.
func (w *ClusterQueueWrapper) Flavor(flavor string, nominal corev1.ResourceList) *ClusterQueueWrapper {
	group := kueue.ResourceGroup{Flavors: []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(flavor)}}}
	for _, res := range slices.Sorted(maps.Keys(nominal)) {
		group.CoveredResources = append(group.CoveredResources, res)
		group.Flavors[0].Resources = append(group.Flavors[0].Resources, kueue.ResourceQuota{Name: res, NominalQuota: nominal[res]})
	}
	w.Spec.ResourceGroups = append(w.Spec.ResourceGroups, group)
	return w
}

// PreemptWithin sets whom a pending workload may preempt in the
// ClusterQueue.
func (w *ClusterQueueWrapper) PreemptWithin(p kueue.PreemptionPolicy) *ClusterQueueWrapper {
	w.Spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: p}
	return w
}

// Reserved records in the status, as Kueue does, quota of one resource of
// one flavor reserved by admitted workloads.
func (w *ClusterQueueWrapper) Reserved(flavor string, res corev1.ResourceName, total string) *ClusterQueueWrapper {
	w.Status.FlavorsReservation = append(w.Status.FlavorsReservation, kueue.FlavorUsage{
		Name: kueue.ResourceFlavorReference(flavor), Resources: []kueue.ResourceUsage{{Name: res, Total: resource.MustParse(total)}},
	})
	return w
}

// Pending records in the status, as Kueue does, how many workloads wait
// to be admitted.
func (w *ClusterQueueWrapper) Pending(n int32) *ClusterQueueWrapper {
	w.Status.PendingWorkloads = n
	return w
}

// Cohort puts the ClusterQueue in a cohort.
func (w *ClusterQueueWrapper) Cohort(name string) *ClusterQueueWrapper {
	w.Spec.CohortName = kueue.CohortReference(name)
	return w
}
