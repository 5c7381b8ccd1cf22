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

	// WorkloadLabel is set on the objects a job needs on a worker besides
	// itself (its PodGroups and their core Workloads) to the name of the
	// manager Workload they travel with, so that they go with it.
	WorkloadLabel = "courier.dev/workload"

	// RemoteFinalizer keeps a remote copy until Courier has copied its final
	// status to the manager (kueue#14734).
	RemoteFinalizer = "courier.dev/dispatcher"
)
