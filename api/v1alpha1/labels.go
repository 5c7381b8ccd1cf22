package v1alpha1

const (
	// OriginLabel is set on every object Courier creates on a worker. Its
	// value is the origin of the manager that created it; Courier touches a
	// remote object only when the value is its own.
	OriginLabel = "courier.dev/origin"

	// ControllerName is the AdmissionCheck spec.controllerName that Courier
	// serves, and the manager of Courier's own RuntimePatch entry.
	ControllerName = "courier.dev/dispatcher"
)
