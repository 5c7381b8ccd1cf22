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

	// ReasonUnreachable: the worker's API server did not answer in time.
	// Network loss.
	ReasonUnreachable = "Unreachable"

	// ReasonConnecting: the first connection attempt is under way (status
	// Unknown).
	ReasonConnecting = "Connecting"
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
)

// Reasons of the events Courier records on manager Workloads, one per
// dispatch step.
const (
	EventNominated        = "Nominated"
	EventAdmittedByWorker = "AdmittedByWorker"
	EventDispatched       = "Dispatched"
	EventFinished         = "Finished"
	EventRemoteEvicted    = "RemoteEvicted"
	EventWorkerLost       = "WorkerLost"
	EventRejected         = "Rejected"
	EventForeignObject    = "ForeignObject"
	EventNamespaceMissing = "NamespaceMissing"
	EventRemoteDeleted    = "RemoteDeleted"
	EventMisconfigured    = "Misconfigured"
)
