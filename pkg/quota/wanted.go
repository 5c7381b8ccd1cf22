package quota

import kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

// Wanted reports whether quota held in own may be wanted by a Workload
// that waits: own, or a ClusterQueue that may borrow it, has Workloads
// pending and less of a resource it holds left under its nominal quota
// than the holder has, so that a Workload its size would not fit. Any
// ClusterQueue in a cohort counts, as cohorts may nest and borrow through
// their parents; a ClusterQueue alone lends to none.
func Wanted(held Amounts, own *kueue.ClusterQueue, cohort []kueue.ClusterQueue) bool {
	if Tight(held, own) {
		return true
	}
	if own.Spec.CohortName == "" {
		return false
	}
	for i := range cohort {
		if cq := &cohort[i]; cq.Name != own.Name && cq.Spec.CohortName != "" && Tight(held, cq) {
			return true
		}
	}
	return false
}

// Tight reports whether cq has Workloads pending and, for some resource of
// held, less unreserved nominal quota than held has of it.
func Tight(held Amounts, cq *kueue.ClusterQueue) bool {
	return TightFor(cq)(held)
}

// TightFor is Tight for one ClusterQueue and many holders: it reads cq's
// reservations once.
func TightFor(cq *kueue.ClusterQueue) func(held Amounts) bool {
	if cq.Status.PendingWorkloads == 0 {
		return func(Amounts) bool { return false }
	}
	reserved := Reserved(cq)
	return func(held Amounts) bool {
		for fr, amount := range held {
			if q, ok := Of(cq, fr); ok && reserved[fr]+amount > q.NominalQuota.MilliValue() {
				return true
			}
		}
		return false
	}
}
