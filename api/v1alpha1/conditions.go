package v1alpha1

// WorkerCluster condition types.
const (
	// WorkerClusterActive is True when Courier holds a working connection to
	// the worker and may dispatch there.
	WorkerClusterActive = "Active"

	// WorkerClusterKindsAvailable is True when the worker serves every job
	// kind Courier dispatches. When False, only the missing kinds are
	// avoided on this worker; it stays in use for the others.
	WorkerClusterKindsAvailable = "KindsAvailable"

	// WorkerClusterDraining is True while a deleted WorkerCluster waits for
	// the workloads placed on it to finish or move (see DrainFinalizer).
	WorkerClusterDraining = "Draining"

	// WorkerClusterRuntimePatchValid is False when spec.runtimePatch breaks
	// Trainer's rules; TrainJobs are then not sent to the worker.
	WorkerClusterRuntimePatchValid = "RuntimePatchValid"

	// WorkerClusterFenceReady is True when a fence answered on the worker
	// the last time Courier reached it, and Courier's heartbeat reaches
	// that fence: under the Fenced policy, only such a worker's jobs ever
	// move when it is lost.
	WorkerClusterFenceReady = "FenceReady"

	// WorkerClusterCredentialValid is False while the credential Courier
	// reaches the worker with is about to expire with nothing to renew it
	// in time (within the Configuration's workerCredentials.expiryWarning),
	// or has expired; True while it lasts or a plugin renews it; Unknown
	// while Courier holds none.
	WorkerClusterCredentialValid = "CredentialValid"
)

// Reasons of the WorkerCluster CredentialValid condition.
const (
	// ReasonNoExpiry: the credential does not expire, as far as Courier
	// can tell (an opaque token, or a plugin's credential without
	// expirationTimestamp, which Courier asks for again when the worker
	// refuses it).
	ReasonNoExpiry = "NoExpiry"
	// ReasonRenewing: a plugin hands out the credential, and Courier asks
	// it for a new one before the one it holds expires.
	ReasonRenewing = "Renewing"
	// ReasonExpiresLater: the credential the kubeconfig embeds expires
	// later than the warning lead time.
	ReasonExpiresLater = "ExpiresLater"
	// ReasonCredentialExpiring: the credential expires within the warning
	// lead time and nothing will renew it: the kubeconfig embeds it, or
	// the plugin failed to renew it. Also the event recorded then.
	ReasonCredentialExpiring = "CredentialExpiring"
	// ReasonCredentialExpired: the credential has expired and Courier
	// holds no other; the worker is not used. Also an Active reason, and
	// the event recorded then. A configuration error.
	ReasonCredentialExpired = "CredentialExpired"
	// ReasonNoCredential: Courier holds no credential for the worker yet;
	// Active says why.
	ReasonNoCredential = "NoCredential"
)

// Reasons of the WorkerCluster FenceReady condition.
const (
	// ReasonFenceAnswering: the fence renews its Lease and Courier's
	// heartbeat reaches it; the message says whether it reads the manager.
	ReasonFenceAnswering = "FenceAnswering"
	// ReasonNoFence: no fence answers on the worker (none installed, or in
	// another namespace than fence.namespace): under the Fenced policy its
	// jobs never move when it is lost.
	ReasonNoFence = "NoFence"
	// ReasonHeartbeatFailing: Courier cannot renew its heartbeat there (its
	// RBAC on the worker, say); the fence will stop Courier's copies.
	ReasonHeartbeatFailing = "HeartbeatFailing"
	// ReasonFenceStopping: the fence is stopping Courier's copies there:
	// Courier's heartbeat has not reached it for its timeout.
	ReasonFenceStopping = "FenceStopping"
)

// Reasons of the WorkerCluster RuntimePatchValid condition.
const (
	// ReasonRuntimePatchAccepted: the patch follows Trainer's rules, or
	// there is none.
	ReasonRuntimePatchAccepted = "Accepted"
	// ReasonRuntimePatchForbidden: the patch sets a field Trainer's webhook
	// refuses in RuntimePatches; the message names it.
	ReasonRuntimePatchForbidden = "Forbidden"
)

// DispatchPolicy condition types and reasons.
const (
	// DispatchPolicyValid is True when the policy's filter and score
	// compile. When False, the AdmissionChecks that name the policy are
	// inactive.
	DispatchPolicyValid = "Valid"

	// ReasonCompiled: filter and score, if any, compile.
	ReasonCompiled = "Compiled"
	// ReasonInvalidExpression: filter or score does not compile or has the
	// wrong type; the message is CEL's.
	ReasonInvalidExpression = "InvalidExpression"
)

// Reasons of the WorkerCluster Draining condition.
const (
	// ReasonWorkloadsPlaced: workloads are still placed on the worker. They
	// run on, and those still running workerLostTimeout after the deletion
	// are dispatched elsewhere.
	ReasonWorkloadsPlaced = "WorkloadsPlaced"

	// ReasonReleasing: no workload is placed on the worker any more;
	// Courier is releasing its objects there before the WorkerCluster goes.
	ReasonReleasing = "Releasing"
)

// Reasons of events Courier records on WorkerClusters, besides the reasons
// of the conditions whose changes it records.
const (
	// EventClusterProfileDeleted: the WorkerCluster's ClusterProfile was
	// deleted, so Courier deleted the WorkerCluster, which drains as any
	// deleted one does; the profile goes once it has drained.
	EventClusterProfileDeleted = "ClusterProfileDeleted"

	// EventCredentialRenewed: the worker's credential is valid again after
	// it was expiring or had expired.
	EventCredentialRenewed = "CredentialRenewed"
)

// Reasons of the WorkerCluster Active condition. Reasons marked as
// configuration errors need a person to fix something; Courier retries them
// slowly. Unreachable is network loss; Courier retries it quickly and counts
// workerLostTimeout from its first occurrence.
const (
	// ReasonConnected: the worker answered with valid credentials.
	ReasonConnected = "Connected"

	// ReasonSecretNotFound: the kubeconfig Secret or its key is missing.
	// A configuration error.
	ReasonSecretNotFound = "SecretNotFound"

	// ReasonInvalidKubeconfig: the kubeconfig does not parse, has no current
	// context, or references files or plugins. A configuration error.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"

	// ReasonInsecureKubeconfig: the kubeconfig skips TLS verification or
	// uses basic auth. A configuration error.
	ReasonInsecureKubeconfig = "InsecureKubeconfig"

	// ReasonForbidden: the worker refused the credentials (401 or 403).
	// A configuration error.
	ReasonForbidden = "Forbidden"

	// ReasonClusterProfileNotFound: the ClusterProfile the WorkerCluster
	// names does not exist, or the manager does not serve ClusterProfiles.
	// A configuration error.
	ReasonClusterProfileNotFound = "ClusterProfileNotFound"

	// ReasonNoAccessProvider: the ClusterProfile offers no access
	// provider that a plugin of the Configuration serves, or the one it
	// offers is unusable (no server, no TLS verification). A
	// configuration error.
	ReasonNoAccessProvider = "NoAccessProvider"

	// ReasonPluginNotAllowed: the kubeconfig runs an exec plugin that the
	// Configuration's workerCredentials does not list, or an
	// auth-provider plugin. A configuration error.
	ReasonPluginNotAllowed = "PluginNotAllowed"

	// ReasonCredentialPluginFailed: the exec plugin failed, ran longer
	// than workerCredentials.pluginTimeout and was stopped, or printed
	// what is not an ExecCredential with a token, and Courier holds no
	// credential that has not expired. A configuration error.
	ReasonCredentialPluginFailed = "CredentialPluginFailed"

	// ReasonUnreachable: the worker's API server did not answer in time.
	// Network loss.
	ReasonUnreachable = "Unreachable"

	// ReasonConnecting: the first connection attempt is under way (status
	// Unknown).
	ReasonConnecting = "Connecting"
	// ReasonSelfFault: the worker is out of reach together with most
	// others, which Courier takes for a fault on its own side: none of
	// their jobs moves until they are back.
	ReasonSelfFault = "SelfFaultSuspected"
)

// Reasons of the WorkerCluster KindsAvailable condition.
const (
	// ReasonAllKindsServed: every dispatched kind is served by the worker.
	ReasonAllKindsServed = "AllKindsServed"

	// ReasonKindsMissing: some kinds are not served; status.unavailableKinds
	// lists them.
	ReasonKindsMissing = "KindsMissing"
)

// Reasons of the Active condition Courier writes on its Kueue
// AdmissionChecks (condition type "Active", as Kueue defines it).
const (
	// ReasonAdmissionCheckActive: the policy exists and at least one of its
	// clusters is Active.
	ReasonAdmissionCheckActive = "Active"

	// ReasonInvalidParameters: spec.parameters does not name a DispatchPolicy
	// (apiGroup courier.dev, kind DispatchPolicy).
	ReasonInvalidParameters = "InvalidParameters"

	// ReasonPolicyNotFound: the named DispatchPolicy does not exist.
	ReasonPolicyNotFound = "PolicyNotFound"

	// ReasonNoActiveClusters: none of the policy's WorkerClusters is Active.
	ReasonNoActiveClusters = "NoActiveClusters"

	// ReasonPolicyInvalid: the DispatchPolicy's filter or score does not
	// compile; its Valid condition says why.
	ReasonPolicyInvalid = "PolicyInvalid"
)

// Reasons of the events Courier records on manager Workloads, one per
// dispatch step.
const (
	// EventNominated: Workload copies were sent to a new set of nominated
	// workers, when a round widens or moves a nomination; a workload's
	// first nomination is told by its check message and
	// status.nominatedClusterNames alone.
	EventNominated = "Nominated"
	// EventMovesExhausted: workers evicted the workload for one reason
	// more often than its policy's maxMoves; it is Rejected or waits, as
	// the policy's onMovesExhausted says.
	EventMovesExhausted = "MovesExhausted"
	// EventPreemptionAllowed: Courier opened its preemption gate on one
	// worker's copy, whose Kueue found no room without preempting; the
	// other workers hold their preemptions back.
	EventPreemptionAllowed = "PreemptionAllowed"
	// EventDispatched: the worker whose Kueue admitted the workload was
	// recorded, then the job created there; the check is Ready.
	EventDispatched = "Dispatched"
	// EventFinished: Courier finished the Workload as its worker did, after
	// the final job status was mirrored, where the manager's Kueue could
	// not: the worker's Workload ended without the job's status showing an
	// end, or the manager was evicting or deactivating it. A Workload the
	// manager's Kueue finished, the usual way, has Kueue's event on its job
	// instead; one Courier finished because Kueue had not within the
	// Configuration's kueueFinishGrace has no event, its Finished condition
	// says it.
	EventFinished = "Finished"
	// EventRemoteEvicted: the worker evicted the workload or its copy
	// vanished; the check goes Retry.
	EventRemoteEvicted = "RemoteEvicted"
	// EventWorkerLost: the worker has been unreachable for longer than
	// workerLostTimeout; the check goes Retry.
	EventWorkerLost = "WorkerLost"
	// EventWorkerUnusable: the worker, Active before, has refused Courier's
	// credentials or lost its kubeconfig for longer than
	// workerLostTimeout; the check goes Retry.
	EventWorkerUnusable = "WorkerUnusable"
	// EventWorkerDraining: the worker's WorkerCluster was deleted
	// workerLostTimeout ago and the job still runs there; the check goes
	// Retry.
	EventWorkerDraining = "WorkerDraining"
	// EventWaitingForWorker: a worker that may still hold the job's earlier
	// copies is out of reach; nothing is dispatched until it is back or
	// lost.
	EventWaitingForWorker = "WaitingForWorker"
	// EventRejected: the job cannot be dispatched as it is.
	EventRejected = "Rejected"
	// EventNotForwarded: the job changed after it was dispatched in a way
	// that cannot reach its worker: a change its worker would refuse (on
	// the Workload), or one to a field Courier does not forward, or that
	// the worker refused (on the manager's job, naming the field). The copy
	// is kept as it is.
	EventNotForwarded = "NotForwarded"
	// EventForwarded: a change made on the manager's job after dispatch
	// (labels, annotations, RuntimePatches, a forwarded spec path) or to
	// the Workload's priority reached the worker's copy. Recorded on the
	// manager's job, or its Workload for the priority.
	EventForwarded = "Forwarded"
	// EventRemoteEdited: a job copy was edited on its worker by hand; the
	// event, on the manager's job, names the fields and says whether the
	// manager's values were set back.
	EventRemoteEdited = "RemoteEdited"
	// EventCheckMissing: the AdmissionCheck of a workload Courier placed
	// is gone; Courier goes on mirroring the running job and dispatches
	// nothing new for it.
	EventCheckMissing = "CheckMissing"
	// EventForeignObject: a worker holds a same-name object Courier does
	// not own; that worker is passed over.
	EventForeignObject = "ForeignObject"
	// EventNamespaceMissing: the job's namespace is missing on a worker;
	// that worker is passed over.
	EventNamespaceMissing = "NamespaceMissing"
	// EventCreateRefused: a worker refused a create (its admission
	// webhooks or policies, or its API's validation); that worker is
	// passed over for a while.
	EventCreateRefused = "CreateRefused"
	// EventCreateFailed: a worker failed to create a Workload copy or a
	// job for a reason of its own (a server error, such as an admission
	// webhook it cannot call because the worker's Kueue or Trainer is
	// down); that worker is passed over for a while.
	EventCreateFailed = "CreateFailed"
	// EventKeptOnLostWorker: a worker lost for longer than
	// workerLostTimeout keeps its job: its lostWorkerPolicy is Never, or
	// Fenced with no fence answering there, or Courier takes the loss for
	// a fault of its own. The job goes on when the worker is back.
	EventKeptOnLostWorker = "KeptOnLostWorker"
	// EventWorkerRevoked: Courier gave a lost worker up under the Fenced
	// policy; its fence stops Courier's copies there, and their jobs move
	// a fence's margin later.
	EventWorkerRevoked = "WorkerRevoked"
	// EventDeleteRefused: a worker refused to delete one of Courier's
	// copies, or to release its finalizers (an admission policy there, say);
	// Courier tries again with a growing backoff, and carries the rest of
	// the pass out meanwhile.
	EventDeleteRefused = "DeleteRefused"
	// EventRemoteDeleted: Courier removed copies from workers. The copies
	// that lose as a job is dispatched are named in the Dispatched event,
	// and those of a finished Workload go without an event.
	EventRemoteDeleted = "RemoteDeleted"
	// EventMisconfigured: the ClusterQueue or the job's dependencies keep
	// the workload from being dispatched.
	EventMisconfigured = "Misconfigured"
	// EventPlacementError: a DispatchPolicy's filter or score failed on a
	// cluster, which is then not eligible.
	EventPlacementError = "PlacementError"
	// EventNoCapacity: no worker's quota could ever hold the workload; the
	// check is Rejected.
	EventNoCapacity = "NoCapacity"
	// EventWaitedTooLong: the workload waited longer than the policy's
	// maxWaitTime; the check goes Retry.
	EventWaitedTooLong = "WaitedTooLong"
)
