package placement

import "math"

// defaultScore ranks clusters when the policy has no score: the share of
// the workload's scarcest resource the cluster would still have free with
// the workload admitted. For each resource the workload requests, it is
// (free − demand) / limit, each summed over the flavors; the score is the
// smallest of them, so a cluster is as good as its tightest resource.
// Summing over flavors ignores which flavor each pod set would get: fits
// decides that; the score only orders the clusters that pass it.
//
// A workload that requests nothing scores 0 everywhere, and so do
// clusters of unknown capacity (the caller does not ask).
func defaultScore(c Capacity, d demand) float64 {
	score, found := math.Inf(1), false
	for res, need := range d {
		var free, limit int64
		for _, f := range c.Flavors {
			if q, ok := f.Resources[res]; ok {
				free = satAdd(free, now.room(q))
				limit = satAdd(limit, ever.room(q))
			}
		}
		share := -1.0 // no quota of it at all; fits refuses such a cluster anyway
		if limit > 0 {
			share = (float64(free) - float64(need)) / float64(limit)
		}
		score, found = min(score, share), true
	}
	if !found {
		return 0
	}
	return score
}
