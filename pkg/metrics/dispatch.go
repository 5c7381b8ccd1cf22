package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Directions of an eviction of a dispatched workload.
const (
	// DirectionManager: the manager evicted or deactivated the workload,
	// and Courier removed its copies from the worker.
	DirectionManager = "manager"
	// DirectionWorker: the worker evicted its copy, or the copy vanished;
	// the check went Retry.
	DirectionWorker = "worker"
)

// Outcomes of the placement decisions Courier carries out.
const (
	// DecisionNominated: copies went to a new set of nominated workers.
	DecisionNominated = "Nominated"
	// DecisionPlaced: a nominated worker's admission won and was recorded.
	DecisionPlaced = "Placed"
	// DecisionWaiting: no worker can take the workload now.
	DecisionWaiting = "Waiting"
	// DecisionNoCapacity: no worker's quota could ever hold the workload.
	DecisionNoCapacity = "NoCapacity"
	// DecisionWaitedTooLong: the workload waited past the policy's
	// maxWaitTime.
	DecisionWaitedTooLong = "WaitedTooLong"
)

// Verdicts of the planner on one worker, at a decision Courier carries out.
const (
	// VerdictNominated: the worker gets or keeps a copy.
	VerdictNominated = "Nominated"
	// VerdictOutranked: eligible, but not among this round's best.
	VerdictOutranked = "Outranked"
	// VerdictUnusable: not connected, kind not served, being deleted,
	// passed over after a refused create, ...
	VerdictUnusable = "Unusable"
	// VerdictRefused: the worker can never take the job as it is.
	VerdictRefused = "Refused"
	// VerdictNoFit: the worker's quota could never hold the whole gang.
	VerdictNoFit = "NoFit"
	// VerdictFilteredOut: the policy's CEL filter is false for it.
	VerdictFilteredOut = "FilteredOut"
	// VerdictPolicyError: the policy's CEL filter or score failed on it.
	VerdictPolicyError = "PolicyError"
)

var (
	// DispatchLatency is the time from the manager Workload's quota
	// reservation to Courier's check turning Ready, by the worker chosen.
	DispatchLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "dispatch_latency_seconds",
		Help:      "Time from the manager Workload's QuotaReserved condition to Courier's check turning Ready, by the worker chosen.",
		// From a worker admitting at once to one that frees room hours later.
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800},
	}, []string{"cluster"})

	// WorkloadsDispatched counts job copies created on workers.
	WorkloadsDispatched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "workloads_dispatched_total",
		Help:      "Job copies Courier created on the worker.",
	}, []string{"cluster"})

	// WorkloadsAdmitted counts Workload copies whose admission by the
	// worker's Kueue Courier took, recording the worker as the placement.
	WorkloadsAdmitted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "workloads_admitted_total",
		Help:      "Workload copies the worker's Kueue admitted and Courier placed the workload on.",
	}, []string{"cluster"})

	// WorkloadsRejected counts the worker's refusals, by the reason of the
	// event Courier recorded.
	WorkloadsRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "workloads_rejected_total",
		Help:      "Workloads the worker refused, by the reason of Courier's event: Rejected, NoCapacity, ForeignObject, NamespaceMissing.",
	}, []string{"cluster", "reason"})

	// WorkloadsRedispatched counts placed workloads Courier gave up on a
	// worker (check Retry), by the reason of its event.
	WorkloadsRedispatched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "workloads_redispatched_total",
		Help:      "Workloads placed on the worker that Courier sent back to be dispatched again, by the reason of its event: RemoteEvicted, WorkerLost, WorkerUnusable, WorkerDraining.",
	}, []string{"cluster", "reason"})

	// WorkloadsEvicted counts evictions of dispatched workloads, by
	// direction (DirectionManager, DirectionWorker).
	WorkloadsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "workloads_evicted_total",
		Help:      "Evictions of workloads dispatched to the worker: direction \"manager\" when the manager evicted or deactivated one, \"worker\" when the worker evicted its copy.",
	}, []string{"cluster", "direction"})

	// PlacementDecisions counts the placement decisions Courier carried
	// out, by outcome.
	PlacementDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "placement_decisions_total",
		Help:      "Placement decisions Courier carried out, by outcome: Nominated, Placed, Waiting, NoCapacity, WaitedTooLong.",
	}, []string{"outcome"})

	// PlacementVerdicts counts, at each decision that had the planner's
	// ranking, what it made of each worker.
	PlacementVerdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "placement_verdicts_total",
		Help:      "The planner's verdict on the worker at each placement decision Courier carried out: Nominated, Outranked, Unusable, Refused, NoFit, FilteredOut, PolicyError.",
	}, []string{"cluster", "verdict"})
)

// dispatchCollectors are the dispatcher's metrics, registered by init.
var dispatchCollectors = []prometheus.Collector{
	DispatchLatency, WorkloadsDispatched, WorkloadsAdmitted, WorkloadsRejected,
	WorkloadsRedispatched, WorkloadsEvicted, PlacementDecisions, PlacementVerdicts,
}

// ObserveDispatchLatency records a check turned Ready for a dispatch to
// cluster, reserved quota at reserved, at now. A reservation time in the
// future (a skewed clock) counts as zero.
func ObserveDispatchLatency(cluster string, reserved, now time.Time) {
	DispatchLatency.WithLabelValues(cluster).Observe(max(now.Sub(reserved), 0).Seconds())
}

// Dispatched records a job copy created on cluster.
func Dispatched(cluster string) { WorkloadsDispatched.WithLabelValues(cluster).Inc() }

// Placed records a worker's admission that Courier took: an admitted copy
// and a Placed decision.
func Placed(cluster string) {
	WorkloadsAdmitted.WithLabelValues(cluster).Inc()
	PlacementDecisions.WithLabelValues(DecisionPlaced).Inc()
}

// Rejected records a refusal by cluster, with the event's reason.
func Rejected(cluster, reason string) { WorkloadsRejected.WithLabelValues(cluster, reason).Inc() }

// Redispatched records a placed workload given up on cluster, with the
// event's reason; RemoteEvicted is also the worker's eviction.
func Redispatched(cluster, reason string) {
	WorkloadsRedispatched.WithLabelValues(cluster, reason).Inc()
	if reason == courier.EventRemoteEvicted {
		WorkloadsEvicted.WithLabelValues(cluster, DirectionWorker).Inc()
	}
}

// EvictedByManager records the manager's eviction or deactivation of a
// workload dispatched to cluster.
func EvictedByManager(cluster string) {
	WorkloadsEvicted.WithLabelValues(cluster, DirectionManager).Inc()
}

// Decided records a placement decision and the planner's verdict on each
// worker it ranked, by cluster name.
func Decided(outcome string, verdicts map[string]string) {
	PlacementDecisions.WithLabelValues(outcome).Inc()
	for cluster, verdict := range verdicts {
		PlacementVerdicts.WithLabelValues(cluster, verdict).Inc()
	}
}
