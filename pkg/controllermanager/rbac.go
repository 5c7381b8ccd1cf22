package controllermanager

// Permissions of the manager process itself; each controller declares its
// own. The markers with namespace=courier-system go into a Role, which the
// chart and config/default bind in Courier's own namespace, whatever it is:
// Courier reads Secrets and holds a Lease there and nowhere else.
//
// Leader election reads, creates and renews its Lease.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=courier-system,resources=leases,verbs=get;create;update
//
// Controllers record events through events.k8s.io, leader election through
// the core API.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// Secure metrics ask the API server who a scraper is and whether it may
// get /metrics (controller-runtime's metrics filters).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
//
// The managedBy webhook follows a job's LocalQueue to its ClusterQueue and
// that queue's AdmissionChecks (both granted by the dispatcher's markers).
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=localqueues,verbs=get;list;watch
//
// Internal certificate management: the rotator's cache lists and watches
// webhook configurations, and Courier writes the CA bundle of its own two
// only, and the certificate into its own Secret. The names are the
// Configuration's defaults; the chart renames them with the release.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;update,resourceNames=courier-mutating-webhook-configuration
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;update,resourceNames=courier-validating-webhook-configuration
// +kubebuilder:rbac:groups="",namespace=courier-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=courier-system,resources=secrets,verbs=update,resourceNames=courier-webhook-server-cert
