// Package placement decides where a workload may go: which of a
// DispatchPolicy's clusters are eligible (usable, with room for the whole
// gang, passing the policy's CEL filter), how they rank (the policy's CEL
// score, or the share of the workload's scarcest resource left free), and
// how many of them get a copy now (the policy's strategy and its rounds).
// Plan is a pure function over snapshots; the dispatcher feeds it and
// carries its decision out.
package placement

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Quota is one resource of one flavor on a worker, in milli-units of the
// resource (millicores, millibytes, milli-GPUs), as resource.Quantity's
// MilliValue gives them.
type Quota struct {
	// Nominal is the ClusterQueue's nominal quota.
	Nominal int64
	// Borrowable is what its cohort may lend it on top.
	Borrowable int64
	// Usage is what admitted workloads hold.
	Usage int64
	// Pending is the demand of the workloads Courier sent there that wait.
	Pending int64
}

// Free is what a new workload could get now.
func (q Quota) Free() int64 { return q.Nominal + q.Borrowable - q.Usage - q.Pending }

// Limit is the most any workload could ever get.
func (q Quota) Limit() int64 { return q.Nominal + q.Borrowable }

// Flavor is the quota of one ResourceFlavor of a ClusterQueue.
type Flavor struct {
	Name      string
	Resources map[corev1.ResourceName]Quota
}

// Capacity is what the ClusterQueue a workload would go to on a worker
// offers it: the ClusterQueue of the workload's LocalQueue there.
type Capacity struct {
	// Known is false when the worker's quota is not known (not observed
	// yet, or no such LocalQueue there): the cluster is then neither
	// refused nor preferred for room.
	Known bool
	// ClusterQueue names it, for messages.
	ClusterQueue string
	// Flavors are in the ClusterQueue's order, which is Kueue's order of
	// preference.
	Flavors []Flavor
}

// Cluster is one of the policy's clusters.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Unusable says why the cluster cannot take the job now whatever the
	// policy says (not connected, kind not served, ...); empty if it can.
	Unusable string
	Capacity Capacity
	// PreemptionGates is set when the cluster's Kueue holds back a
	// preemption for a copy Courier sends with its preemption gate, until
	// Courier opens it.
	PreemptionGates bool
}

// PodSet is one pod set of the workload.
type PodSet struct {
	Name  string
	Count int32
	// Requests are one pod's, in milli-units.
	Requests map[corev1.ResourceName]int64
}

// Workload is the workload to place.
type Workload struct {
	Namespace string
	Queue     string
	Priority  int32
	Labels    map[string]string
	PodSets   []PodSet
	// Object is the job, as unstructured content, for CEL's `object`.
	Object map[string]any
}

// Policy is a DispatchPolicy with its defaults applied and its CEL
// compiled.
type Policy struct {
	Strategy     courier.DispatchStrategy
	FanOut       int
	StepSize     int
	RoundTimeout time.Duration
	// MaxWaitTime is zero for no limit.
	MaxWaitTime time.Duration
	// MaxMoves and OnMovesExhausted bound how often workers' evictions
	// may send the workload elsewhere for one reason; the dispatcher,
	// not Plan, applies them.
	MaxMoves         int
	OnMovesExhausted courier.MovesExhaustedAction
	// Filter and Score are nil when the policy has none.
	Filter *Program
	Score  *Program
}

// Input is everything Plan decides on.
type Input struct {
	Policy   Policy
	Workload Workload
	// Clusters are the policy's clusters, in any order.
	Clusters []Cluster
	// Started is when the workload began to wait for a worker; maxWaitTime
	// counts from it. Rounds count from RoundsSince, when the first
	// clusters were nominated, or from Started if it is zero: a workload
	// first planned long after it began to wait starts at round 0, not with
	// many clusters at once.
	Started, RoundsSince, Now time.Time
	// Nominated are the clusters nominated before; those still eligible
	// stay nominated, so that a copy is not taken back from a worker whose
	// Kueue may be about to admit it.
	Nominated []string
}

// Verdict is what Plan made of one cluster.
type Verdict struct {
	Cluster  string
	Eligible bool
	// Score ranks the eligible clusters, higher first.
	Score float64
	// Reason says why an ineligible cluster was passed over.
	Reason string
	// Preempts is set on an eligible cluster whose copy would have to
	// preempt to be admitted there now.
	Preempts bool
}

// Decision is Plan's answer.
type Decision struct {
	// Nominate are the clusters that get or keep a copy now, best first.
	Nominate []string
	// Considered has a verdict for every cluster: the eligible ones best
	// first, then the others by name.
	Considered []Verdict
	// Impossible is set when no cluster's quota could ever hold the whole
	// workload; the verdicts say why for each.
	Impossible bool
	// Expired is set when the workload has waited longer than the policy's
	// maxWaitTime.
	Expired bool
	// NextRound is how long until the nomination widens, zero if it will
	// not.
	NextRound time.Duration
	// ExpiresIn is how long until the workload has waited maxWaitTime,
	// zero if the policy sets none or it has expired.
	ExpiresIn time.Duration
	// Preempting is the nominated cluster whose copy may preempt, the
	// only one; empty when none is nominated.
	Preempting string
	// HeldBack counts the eligible clusters that would have to preempt and
	// wait, since one cluster preempts at a time.
	HeldBack int
	// Errors are the CEL evaluations that failed, per cluster.
	Errors []ClusterError
	// Message explains the decision in bounded length: what was
	// nominated, what was passed over and why.
	Message string
}

// ClusterError is a CEL evaluation that failed on one cluster.
type ClusterError struct {
	Cluster string
	Err     error
}
