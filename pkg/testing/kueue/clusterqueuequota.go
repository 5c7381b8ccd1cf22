package kueue

import (
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

// Reserved records in the status, as Kueue does, quota of one resource of
// one flavor reserved by admitted workloads.
func (w *ClusterQueueWrapper) Reserved(flavor string, res corev1.ResourceName, total string) *ClusterQueueWrapper {
	w.Status.FlavorsReservation = append(w.Status.FlavorsReservation, kueue.FlavorUsage{
		Name: kueue.ResourceFlavorReference(flavor), Resources: []kueue.ResourceUsage{{Name: res, Total: resource.MustParse(total)}},
	})
	return w
}
