package v1alpha1

const (
	// OriginLabel is set on every object Courier creates on a worker. Its
	// value is the origin of the manager that created it; Courier touches a
	// remote object only when the value is its own.
	OriginLabel = "courier.dev/origin"

	// ControllerName is the AdmissionCheck spec.controllerName that Courier
	// serves, and the manager of Courier's own RuntimePatch entry.
	ControllerName = "courier.dev/dispatcher"

	// ManagerUIDAnnotation on a remote copy holds the UID of the manager
	// Workload it was copied for, so that a copy outliving its Workload (one
	// deleted and created again under the same name) is recognised as stale.
	ManagerUIDAnnotation = "courier.dev/manager-workload-uid"

	// AdmissionAnnotation on a remote copy holds the manager Workload's
	// eviction count when the copy was made: a copy of an earlier admission
	// is stale, and goes before the workload runs anywhere again.
	AdmissionAnnotation = "courier.dev/admission"

	// SpecHashesAnnotation on a job copy records, as a JSON map, a
	// fingerprint of each field Courier compares (labels, annotations, each
	// top-level spec field) as Courier last wrote it. A later difference
	// tells a change made on the manager, which Courier forwards, from an
	// edit made on the worker by hand, which it reports and sets back.
	SpecHashesAnnotation = "courier.dev/spec-hashes"

	// WorkloadLabel is set on the objects a job needs on a worker besides
	// itself (its PodGroups and their core Workloads) to the name of the
	// manager Workload they travel with, so that they go with it.
	WorkloadLabel = "courier.dev/workload"

	// RemoteFinalizer keeps a remote copy until Courier has copied its final
	// status to the manager (kueue#14734).
	RemoteFinalizer = "courier.dev/dispatcher"

	// PlacementAnnotation on a manager Workload records, as JSON
	// {"cluster":C,"evictions":E}, the worker Courier chose for the job and
	// the Workload's eviction count at that moment. Courier writes it before
	// it creates the job there, so that no later decision can pick another
	// worker while that one may run the job; it outlives Kueue clearing
	// status.clusterName on eviction, so that an evicted job's copies are
	// known to be gone before the job is dispatched again.
	PlacementAnnotation = "courier.dev/placement"

	// DrainFinalizer holds a deleted WorkerCluster until no manager Workload
	// is placed on it any more and Courier has released its finalizers on
	// what it can still reach there.
	DrainFinalizer = "courier.dev/drain"

	// MovesAnnotation on a manager Workload lists, as JSON, the moves that
	// workers' evictions made it take: worker, reason and when, the newest
	// last. A DispatchPolicy's maxMoves counts them per reason; removing
	// the annotation lets a workload held by onMovesExhausted: Wait go on.
	MovesAnnotation = "courier.dev/moves"

	// PreemptionGate is the preemption gate Courier puts on its Workload
	// copies on a worker whose Kueue takes preemption gates (its
	// MultiKueueOrchestratedPreemption feature): that Kueue preempts for a
	// copy only once Courier opens the gate, on one worker at a time.
	PreemptionGate = "courier.dev/preemption"

	// GateProbeLabel marks the inactive Workload Courier creates, and then
	// deletes, on connecting to a worker to find out whether its Kueue
	// takes preemption gates.
	GateProbeLabel = "courier.dev/gate-probe"

	// HeartbeatLeasePrefix names the Lease, one per origin, that Courier
	// renews on each worker it reaches, in the fence's namespace: the Lease
	// courier-heartbeat-<origin>, holder <origin>, whose leaseDurationSeconds
	// is the fence timeout. The worker's fence stops that origin's copies
	// once it has seen no renewal for that long, by its own clock.
	HeartbeatLeasePrefix = "courier-heartbeat-"

	// FenceLeaseName is the Lease the worker's fence renews in its
	// namespace, so that Courier sees a fence answers there.
	FenceLeaseName = "courier-fence"

	// FencedOriginsAnnotation on the fence's Lease lists, comma-separated
	// and sorted, the origins whose copies the fence is stopping.
	FencedOriginsAnnotation = "courier.dev/fenced-origins"

	// FenceManagerAnnotation on the fence's Lease says whether the fence
	// reads its WorkerCluster on the manager: Reading, Unreachable, or
	// Unconfigured. One that reads it keeps Courier's copies running while
	// the manager has not revoked the worker, however long Courier's
	// heartbeat is missing.
	FenceManagerAnnotation = "courier.dev/fence-manager"

	// FencedAnnotation on a Workload copy holds the time (RFC 3339, the
	// fence's clock) at which the worker's fence deactivated it because its
	// manager's heartbeat had stopped.
	FencedAnnotation = "courier.dev/fenced"
)
