package placement

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// demand is what pods ask for, in milli-units; it holds only positive
// requests, since a zero one needs no quota (Kueue ignores it too).
type demand map[corev1.ResourceName]int64

// podSetDemand is count × one pod's requests. A pod set of no pods asks
// for nothing.
func podSetDemand(ps PodSet) demand {
	d := demand{}
	if ps.Count <= 0 {
		return d
	}
	for r, q := range ps.Requests {
		if q > 0 {
			d[r] = satMul(int64(ps.Count), q)
		}
	}
	return d
}

// gang is the workload's demand, worked out once per Plan: each pod
// set's, in order, and the whole workload's.
type gang struct {
	podSets []PodSet
	demands []demand
	total   demand
}

func newGang(w Workload) gang {
	g := gang{podSets: w.PodSets, demands: make([]demand, len(w.PodSets)), total: demand{}}
	for i, ps := range w.PodSets {
		g.demands[i] = podSetDemand(ps)
		for r, q := range g.demands[i] {
			g.total[r] = satAdd(g.total[r], q)
		}
	}
	return g
}

// sortedResources gives a demand's resources in name order, so that
// reasons do not depend on map order.
func (d demand) sortedResources() []corev1.ResourceName {
	rs := make([]corev1.ResourceName, 0, len(d))
	for r := range d {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}

// sumFlavors adds up each resource's quota over the flavors, for CEL's
// cluster.capacity.
func sumFlavors(c Capacity) map[corev1.ResourceName]Quota {
	sum := map[corev1.ResourceName]Quota{}
	for _, f := range c.Flavors {
		for r, q := range f.Resources {
			s := sum[r]
			s.Nominal = satAdd(s.Nominal, q.Nominal)
			s.Borrowable = satAdd(s.Borrowable, q.Borrowable)
			s.Usage = satAdd(s.Usage, q.Usage)
			s.Pending = satAdd(s.Pending, q.Pending)
			sum[r] = s
		}
	}
	return sum
}

// mode says which room fits counts: what is free now, or the most there
// could ever be.
type mode int

const (
	now mode = iota
	ever
)

// room is Quota.Free or Quota.Limit, saturating.
func (m mode) room(q Quota) int64 {
	limit := satAdd(q.Nominal, q.Borrowable)
	if m == ever {
		return limit
	}
	return satSub(satSub(limit, q.Usage), q.Pending)
}

func (m mode) verb() string {
	if m == ever {
		return "can ever have"
	}
	return "has free"
}

// HasRoomNow reports whether a capacity known has room now for the whole
// workload, as fits assigns it. Unknown capacity has no room to offer.
func HasRoomNow(c Capacity, w Workload) bool {
	if !c.Known {
		return false
	}
	ok, _ := newGang(w).fits(c, now)
	return ok
}

// fits says whether the workload's pod sets can be assigned to the
// capacity's flavors as Kueue assigns them: in order, each pod set
// entirely to the first flavor, in the ClusterQueue's order, with room
// for all of its requests beside what the earlier pod sets took. A flavor
// that does not list a requested resource cannot take the pod set. When
// it does not fit, the reason names the resource and the numbers.
//
// This is first fit, as Kueue does it, not a search of every assignment:
// a cluster Kueue would refuse must not look like a fit.
func (g gang) fits(c Capacity, m mode) (bool, string) {
	taken := make([]demand, len(c.Flavors))
	for i, d := range g.demands {
		if len(d) == 0 {
			continue
		}
		chosen := -1
		for j, f := range c.Flavors {
			if hasRoom(f, taken[j], d, m) {
				chosen = j
				break
			}
		}
		if chosen < 0 {
			return false, explain(c, len(g.podSets) > 1, g.podSets[i].Name, d, taken, m)
		}
		if taken[chosen] == nil {
			taken[chosen] = demand{}
		}
		for res, q := range d {
			taken[chosen][res] = satAdd(taken[chosen][res], q)
		}
	}
	return true, ""
}

func hasRoom(f Flavor, taken, d demand, m mode) bool {
	for res, q := range d {
		quota, ok := f.Resources[res]
		if !ok || satAdd(taken[res], q) > m.room(quota) {
			return false
		}
	}
	return true
}

// explain names the first resource (by name) of the pod set that no
// flavor alone has room for, with the most room any one flavor has left;
// if each resource has room somewhere but never all in the same flavor,
// it says so.
func explain(c Capacity, named bool, podSet string, d demand, taken []demand, m mode) string {
	var b strings.Builder
	if c.ClusterQueue != "" {
		fmt.Fprintf(&b, "ClusterQueue %s: ", c.ClusterQueue)
	}
	if named { // only when the workload has several pod sets
		fmt.Fprintf(&b, "pod set %s: ", podSet)
	}
	for _, res := range d.sortedResources() {
		best, listed := int64(math.MinInt64), 0
		for i, f := range c.Flavors {
			if q, ok := f.Resources[res]; ok {
				listed++
				best = max(best, satSub(m.room(q), taken[i][res]))
			}
		}
		switch {
		case listed == 0:
			fmt.Fprintf(&b, "%s: needs %s, no flavor has it", res, Human(res, d[res]))
			return b.String()
		case d[res] > best:
			fmt.Fprintf(&b, "%s: needs %s, %s %s", res, Human(res, d[res]), m.verb(), Human(res, max(best, 0)))
			if listed > 1 {
				b.WriteString(" in one flavor")
			}
			return b.String()
		}
	}
	b.WriteString("no one flavor has room for all of its requests")
	return b.String()
}

// satAdd and satMul saturate instead of wrapping, so that absurd requests
// or quotas compare as huge rather than negative.
func satAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// satSub is a − b, saturating.
func satSub(a, b int64) int64 {
	if b == math.MinInt64 { // −b does not exist
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b // a + 2⁶³, in range for a < 0
	}
	return satAdd(a, -b)
}

// satMul is for non-negative operands.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
