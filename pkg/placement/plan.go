package placement

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Tiers of the default ranking: a cluster with room now beats one whose
// room is unknown, which beats one that would have to wait for room.
const (
	tierFitsNow = iota
	tierUnknown
	tierNoRoomNow
)

// ReasonFilteredOut is the Verdict reason of a cluster the policy's filter
// is false for.
const ReasonFilteredOut = "filtered out by the policy's filter"

// candidate is an eligible cluster being ranked.
type candidate struct {
	name  string
	score float64
	tier  int
	// preempts: the cluster's known quota has no room now and its Kueue
	// does not hold a preemption back for Courier, so a copy there may
	// preempt.
	preempts bool
	// gated: its Kueue holds a preemption back until Courier opens the
	// copy's preemption gate.
	gated bool
}

// Plan decides which of the policy's clusters get a copy of the workload.
//
// A cluster is eligible unless it is unusable, its known quota could never
// hold the whole workload (see fits), the policy's filter is false for it,
// or the filter or score fails on it (reported in Errors). The eligible
// ones are ranked by the policy's score, highest first; without one, those
// with room now come first, then those of unknown capacity, then those
// without room now, each group by the default score (see defaultScore).
// Ties go by name.
//
// Rounds count RoundTimeouts since RoundsSince (or Started). AllAtOnce nominates every
// eligible cluster; BestFit the best FanOut×(round+1); Incremental the
// best StepSize×(round+1). Clusters nominated before that are still
// eligible stay nominated, so that no copy is taken back from a worker
// about to admit it, and count among those places unless they have no
// room now; while one holds a copy, others are added only if they have
// room now.
//
// Plan is pure and never panics; a Policy not built by Compile gets the
// API's defaults for its zero fields.
func Plan(in Input) Decision {
	pol := withDefaults(in.Policy)
	clusters := byName(in.Clusters)
	g := newGang(in.Workload)

	var wv *workloadVars // built once, only when the policy has CEL
	if pol.Filter != nil || pol.Score != nil {
		wv = newWorkloadVars(in.Workload, g.total)
	}

	var out Decision
	var eligible []candidate
	var others []Verdict
	// Impossible needs at least one cluster, all of known capacity.
	out.Impossible = len(clusters) > 0
	for _, c := range clusters {
		everFits, why := true, ""
		if c.Capacity.Known {
			everFits, why = g.fits(c.Capacity, ever)
		}
		if everFits || !c.Capacity.Known {
			out.Impossible = false
		}
		switch {
		case c.Unusable != "":
			others = append(others, Verdict{Cluster: c.Name, Reason: c.Unusable})
		case !everFits:
			others = append(others, Verdict{Cluster: c.Name, Reason: why})
		default:
			cand, reason, err := rank(pol, g, wv, c)
			if err != nil {
				out.Errors = append(out.Errors, ClusterError{Cluster: c.Name, Err: err})
			}
			if reason != "" {
				others = append(others, Verdict{Cluster: c.Name, Reason: reason})
				continue
			}
			eligible = append(eligible, cand)
		}
	}

	// Without a CEL score every tier is tierFitsNow, so one order serves
	// both rankings. Names are unique, so the order is total.
	slices.SortFunc(eligible, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.tier, b.tier), cmp.Compare(b.score, a.score), cmp.Compare(a.name, b.name))
	})

	elapsed := max(in.Now.Sub(cmp.Or(in.RoundsSince, in.Started)), 0)
	round := int64(elapsed / pol.RoundTimeout)
	n := len(eligible)
	switch pol.Strategy {
	case courier.BestFit:
		n = widen(pol.FanOut, round, n)
	case courier.Incremental:
		n = widen(pol.StepSize, round, n)
	}
	kept := make(map[string]bool, len(in.Nominated))
	for _, name := range in.Nominated {
		kept[name] = true
	}
	waiting := nominate(&out, eligible, kept, n, round)
	// others are already by name: clusters were sorted by name.
	out.Considered = append(out.Considered, others...)
	if waiting > 0 {
		out.NextRound = time.Duration(round+1)*pol.RoundTimeout - elapsed
	}
	out.Expired = pol.MaxWaitTime > 0 && in.Now.Sub(in.Started) > pol.MaxWaitTime
	if pol.MaxWaitTime > 0 && !out.Expired {
		out.ExpiresIn = pol.MaxWaitTime - max(in.Now.Sub(in.Started), 0)
	}
	out.Message = message(out, pol, len(clusters), waiting)
	return out
}

// nominate fills out.Nominate and the eligible verdicts for a round of
// n places, and returns how many eligible clusters wait for a later one.
//
// A cluster nominated before holds its copy and takes one of the round's
// places while it may have room: the ranking moves as this workload's own
// copy uses up its cluster's room, and a move must not add copies. Once
// some cluster holds a copy, another gets one only if it has room now, for
// a copy queued on a full cluster is one more write that admits nothing
// sooner.
//
// One cluster preempts at a time: a copy sent to several full workers
// could preempt on each of them for a job that runs on one. A cluster
// whose Kueue takes preemption gates gets a gated copy, and the dispatcher
// opens one gate at a time. Any other cluster that would have to preempt
// is nominated only when no cluster is preempting or gated, and only once
// no nominated cluster has room: at once if none has, else from the second
// round on. Among such clusters the ranking puts first the one with the
// least missing, which likely preempts least.
func nominate(out *Decision, eligible []candidate, kept map[string]bool, n int, round int64) (waiting int) {
	places, holding, preempting, roomy, gated := n, false, "", false, false
	for _, c := range eligible {
		if !kept[c.name] {
			continue
		}
		holding = true
		if c.tier != tierNoRoomNow {
			places--
		}
		if c.preempts && preempting == "" {
			preempting = c.name
		}
		roomy = roomy || c.tier == tierFitsNow && !c.preempts
		gated = gated || c.gated
	}
	var heldBack []candidate
	for _, c := range eligible {
		switch {
		case kept[c.name]:
			out.Nominate = append(out.Nominate, c.name)
		case c.preempts:
			heldBack = append(heldBack, c)
		case places > 0 && (!holding || c.tier != tierNoRoomNow):
			out.Nominate = append(out.Nominate, c.name)
			places--
			roomy = roomy || c.tier == tierFitsNow
			gated = gated || c.gated
		default:
			waiting++
		}
		out.Considered = append(out.Considered, Verdict{Cluster: c.name, Eligible: true, Score: c.score, Preempts: c.preempts})
	}
	if len(heldBack) > 0 && preempting == "" && !gated && places > 0 && (!roomy || round > 0) {
		preempting = heldBack[0].name
		out.Nominate = append(out.Nominate, preempting)
		heldBack = heldBack[1:]
	}
	out.Preempting = preempting
	out.HeldBack = len(heldBack)
	if roomy && !gated && round == 0 && len(heldBack) > 0 && preempting == "" {
		waiting++ // The next round may let one of them preempt.
	}
	return waiting
}

// rank runs the policy's CEL on a cluster that could take the workload:
// the filter, then the score, or else the default ranking. It returns the
// cluster ranked, or why it is passed over and, if CEL failed, the error.
func rank(pol Policy, g gang, wv *workloadVars, c Cluster) (candidate, string, error) {
	var v *vars
	if wv != nil {
		v = newVars(c, wv)
	}
	if pol.Filter != nil {
		ok, err := pol.Filter.evalBool(v)
		if err != nil {
			return candidate{}, "the policy's filter failed: " + err.Error(), fmt.Errorf("filter: %w", err)
		}
		if !ok {
			return candidate{}, ReasonFilteredOut, nil
		}
	}
	cand := candidate{name: c.Name, gated: c.PreemptionGates}
	if c.Capacity.Known && !c.PreemptionGates {
		ok, _ := g.fits(c.Capacity, now)
		cand.preempts = !ok
	}
	switch {
	case pol.Score != nil:
		s, err := pol.Score.evalNumber(v)
		if err != nil {
			return candidate{}, "the policy's score failed: " + err.Error(), fmt.Errorf("score: %w", err)
		}
		cand.score = s
	case !c.Capacity.Known:
		cand.tier = tierUnknown
	default:
		cand.score = defaultScore(c.Capacity, g.total)
		if ok, _ := g.fits(c.Capacity, now); !ok {
			cand.tier = tierNoRoomNow
		}
	}
	return cand, "", nil
}

// widen is how many clusters a round of step more each has nominated.
func widen(step int, round int64, eligible int) int {
	if round >= int64(eligible) || step >= eligible { // step ≥ 1
		return eligible
	}
	return int(min(int64(step)*(round+1), int64(eligible)))
}

// withDefaults gives a Policy the API's defaults where it has none or an
// invalid value, so that a hand-built Policy cannot divide by zero.
func withDefaults(p Policy) Policy {
	switch p.Strategy {
	case courier.AllAtOnce, courier.Incremental, courier.BestFit:
	default:
		p.Strategy = courier.DefaultStrategy
	}
	if p.FanOut < 1 {
		p.FanOut = courier.DefaultFanOut
	}
	if p.StepSize < 1 {
		p.StepSize = courier.DefaultStepSize
	}
	if p.RoundTimeout <= 0 {
		p.RoundTimeout = courier.DefaultRoundTimeout
	}
	return p
}

// byName sorts a copy of the clusters by name and drops repeated names
// (the first of them, in input order, stays), so that the decision does
// not depend on the input's order.
func byName(cs []Cluster) []Cluster {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b Cluster) int { return cmp.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b Cluster) bool { return a.Name == b.Name })
}
