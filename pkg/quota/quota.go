// Package quota reads Kueue's quota arithmetic off its objects: what an
// admission holds, and what a ClusterQueue offers and has reserved, per
// flavor and resource, in milli-units. The dispatcher and the workers'
// capacity both read quota this way; one reading keeps them agreeing.
package quota

import (
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// FlavorResource is one resource of one ResourceFlavor.
type FlavorResource struct {
	Flavor   string
	Resource corev1.ResourceName
}

// Amounts are quantities in milli-units, by flavor and resource.
type Amounts map[FlavorResource]int64

// Held is the quota an admission holds, summed over its pod sets, in the
// flavors Kueue assigned. Resources without a flavor or with no usage hold
// nothing.
func Held(adm *kueue.Admission) Amounts {
	held := Amounts{}
	if adm == nil {
		return held
	}
	for _, ps := range adm.PodSetAssignments {
		for res, q := range ps.ResourceUsage {
			flavor, ok := ps.Flavors[res]
			if !ok || q.IsZero() {
				continue
			}
			held[FlavorResource{string(flavor), res}] += q.MilliValue()
		}
	}
	return held
}

// Reserved is what a ClusterQueue's status says its admitted and reserving
// Workloads hold.
func Reserved(cq *kueue.ClusterQueue) Amounts {
	return Totals(cq.Status.FlavorsReservation)
}

// Totals are the totals of a ClusterQueue status's list of flavor usage.
func Totals(usage []kueue.FlavorUsage) Amounts {
	totals := Amounts{}
	for _, f := range usage {
		for _, r := range f.Resources {
			totals[FlavorResource{string(f.Name), r.Name}] = r.Total.MilliValue()
		}
	}
	return totals
}

// Of is a ClusterQueue's quota for one resource of one flavor, and whether
// its spec lists that pair.
func Of(cq *kueue.ClusterQueue, fr FlavorResource) (kueue.ResourceQuota, bool) {
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			if string(f.Name) != fr.Flavor {
				continue
			}
			for _, r := range f.Resources {
				if r.Name == fr.Resource {
					return r, true
				}
			}
		}
	}
	return kueue.ResourceQuota{}, false
}
