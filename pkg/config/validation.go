package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

// TrainJob is built in; it cannot also be an external framework.
var trainJobGroupKind = schema.GroupKind{Group: "trainer.kubeflow.org", Kind: "TrainJob"}

const (
	maxExternalFrameworks = 32
	maxStatusFields       = 32
	maxForwardedPaths     = 32
	maxSpecPath           = 256
	maxManagedByValue     = 63
	maxPath               = 4096
	// Beyond this many at once, dispatches only queue up at the API servers.
	maxDispatchConcurrency = 256
	// A longer wait would show owners a status older than they expect of
	// a running job.
	maxStatusMirrorDelay = time.Minute
	// A finished job's Workload holds its quota on the manager until it is
	// finished; a longer wait would hold it for a Kueue that is not coming.
	maxKueueFinishGrace = 10 * time.Minute
)

// A path segment is a JSON field name as Kubernetes APIs spell them.
var pathSegment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks a defaulted Configuration.
func Validate(c *configv1alpha1.Configuration) field.ErrorList {
	var errs field.ErrorList
	if msgs := validation.IsValidLabelValue(c.Origin); c.Origin == "" || len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("origin"), c.Origin, orMessage(msgs, "must be a non-empty label value")))
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), c.Namespace, strings.Join(msgs, "; ")))
	}
	if d := c.WorkerLostTimeout; d == nil || d.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("workerLostTimeout"), durationString(d), "must be a positive duration, such as 15m"))
	}
	if d := c.GCInterval; d == nil || d.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("gcInterval"), durationString(d), "must be a positive duration, such as 1m"))
	}
	if n := c.DispatchConcurrency; n == nil || *n < 1 || *n > maxDispatchConcurrency {
		errs = append(errs, field.Invalid(field.NewPath("dispatchConcurrency"), deref(n), fmt.Sprintf("must be between 1 and %d", maxDispatchConcurrency)))
	}
	if d := c.StatusMirrorDelay; d == nil || d.Duration < 0 || d.Duration > maxStatusMirrorDelay {
		errs = append(errs, field.Invalid(field.NewPath("statusMirrorDelay"), durationString(d), "must be between 0s and 1m, such as 1s"))
	}
	if d := c.KueueFinishGrace; d == nil || d.Duration < 0 || d.Duration > maxKueueFinishGrace {
		errs = append(errs, field.Invalid(field.NewPath("kueueFinishGrace"), durationString(d), "must be between 0s and 10m, such as 30s"))
	}
	errs = append(errs, validateLostWorker(c)...)
	errs = append(errs, validateClient(c.ManagerClient, field.NewPath("managerClient"))...)
	errs = append(errs, validateClient(c.WorkerClient, field.NewPath("workerClient"))...)
	errs = append(errs, validateFrameworks(c.ExternalFrameworks, field.NewPath("externalFrameworks"))...)
	errs = append(errs, validateWebhook(c.Webhook, field.NewPath("webhook"))...)
	errs = append(errs, validateWorkerCredentials(c.WorkerCredentials, field.NewPath("workerCredentials"))...)
	errs = append(errs, validatePlacementDecisions(c.PlacementDecisions, field.NewPath("placementDecisions"))...)
	if c.Health != nil {
		errs = append(errs, validateBindAddress(c.Health.BindAddress, field.NewPath("health", "bindAddress"))...)
	}
	errs = append(errs, validateMetrics(c.Metrics, field.NewPath("metrics"))...)
	if le := c.LeaderElection; le != nil && le.LeaderElect != nil && *le.LeaderElect {
		p := field.NewPath("leaderElection")
		if le.ResourceName == "" {
			errs = append(errs, field.Required(p.Child("resourceName"), "names the lease used for leader election"))
		}
		if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
			errs = append(errs, field.Invalid(p.Child("leaseDuration"), le.LeaseDuration.Duration.String(), "must be greater than renewDeadline"))
		}
		if le.RenewDeadline.Duration <= le.RetryPeriod.Duration {
			errs = append(errs, field.Invalid(p.Child("renewDeadline"), le.RenewDeadline.Duration.String(), "must be greater than retryPeriod"))
		}
	}
	return errs
}

func validateWebhook(w *configv1alpha1.Webhook, p *field.Path) field.ErrorList {
	if w == nil || w.Enable == nil || !*w.Enable {
		return nil
	}
	var errs field.ErrorList
	if w.Port == nil || *w.Port < 1 || *w.Port > 65535 {
		errs = append(errs, field.Invalid(p.Child("port"), deref(w.Port), "must be a TCP port, between 1 and 65535"))
	}
	switch w.CertManagement {
	case configv1alpha1.CertManagementInternal:
		for name, value := range map[string]string{"serviceName": w.ServiceName, "secretName": w.SecretName} {
			if msgs := validation.IsDNS1123Label(value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child(name), value, strings.Join(msgs, "; ")))
			}
		}
		for name, value := range map[string]string{"mutatingConfigurationName": w.MutatingConfigurationName, "validatingConfigurationName": w.ValidatingConfigurationName} {
			if msgs := validation.IsDNS1123Subdomain(value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child(name), value, strings.Join(msgs, "; ")))
			}
		}
	case configv1alpha1.CertManagementExternal:
	default:
		errs = append(errs, field.NotSupported(p.Child("certManagement"), w.CertManagement, []configv1alpha1.CertManagement{configv1alpha1.CertManagementInternal, configv1alpha1.CertManagementExternal}))
	}
	return errs
}

// validateMetrics checks the metrics endpoint. A certificate directory
// with plain HTTP is refused rather than ignored: whoever set it expects
// HTTPS.
func validateMetrics(m *configv1alpha1.MetricsEndpoint, p *field.Path) field.ErrorList {
	if m == nil {
		return field.ErrorList{field.Required(p, "the metrics endpoint must be set")}
	}
	errs := validateBindAddress(m.BindAddress, p.Child("bindAddress"))
	switch {
	case m.SecureServing == nil:
		errs = append(errs, field.Required(p.Child("secureServing"), "true serves HTTPS to authorized clients, false plain HTTP"))
	case !*m.SecureServing && m.CertDir != "":
		errs = append(errs, field.Forbidden(p.Child("certDir"), "a certificate is for HTTPS; remove certDir, or set secureServing to true"))
	}
	if len(m.CertDir) > maxPath {
		errs = append(errs, field.TooLong(p.Child("certDir"), m.CertDir, maxPath))
	}
	return errs
}

// validateBindAddress accepts host:port, with an empty host for every
// address, or "0" for off.
func validateBindAddress(addr string, p *field.Path) field.ErrorList {
	if addr == "0" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return field.ErrorList{field.Invalid(p, addr, `must be host:port, such as ":8443" or "127.0.0.1:8443", or "0" for off`)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return field.ErrorList{field.Invalid(p, addr, "the port must be a number between 0 and 65535")}
	}
	return nil
}

func validateClient(c *configv1alpha1.ClientConnection, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c == nil {
		return append(errs, field.Required(p, "client rate limits must be set"))
	}
	if c.QPS == nil || *c.QPS <= 0 {
		errs = append(errs, field.Invalid(p.Child("qps"), deref(c.QPS), "must be greater than zero"))
	}
	if c.Burst == nil || *c.Burst <= 0 {
		errs = append(errs, field.Invalid(p.Child("burst"), deref(c.Burst), "must be greater than zero"))
	} else if c.QPS != nil && float32(*c.Burst) < *c.QPS {
		errs = append(errs, field.Invalid(p.Child("burst"), *c.Burst, "must be at least qps"))
	}
	return errs
}

func validateFrameworks(fws []configv1alpha1.ExternalFramework, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fws) > maxExternalFrameworks {
		errs = append(errs, field.TooMany(p, len(fws), maxExternalFrameworks))
	}
	seen := sets.New[schema.GroupKind]()
	for i, fw := range fws {
		fp := p.Index(i)
		gvk, err := ParseFrameworkName(fw.Name)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child("name"), fw.Name, err.Error()))
		} else {
			switch gk := gvk.GroupKind(); {
			case gk == trainJobGroupKind:
				errs = append(errs, field.Forbidden(fp.Child("name"), "TrainJob is built in; remove it from externalFrameworks"))
			case seen.Has(gk):
				errs = append(errs, field.Duplicate(fp.Child("name"), fw.Name))
			default:
				seen.Insert(gk)
			}
		}
		if fw.ManagedBy != nil {
			errs = append(errs, validateManagedBy(fw.ManagedBy, fp.Child("managedBy"))...)
		}
		if fw.Status != nil {
			errs = append(errs, validateStatusFields(fw.Status.Fields, fp.Child("status", "fields"))...)
		}
		errs = append(errs, validateForwardedPaths(fw, fp.Child("forwardedSpecPaths"))...)
	}
	return errs
}

// validateForwardedPaths accepts distinct paths under spec, none of them
// one that each side's Kueue or Courier owns: suspend and managedBy.
func validateForwardedPaths(fw configv1alpha1.ExternalFramework, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fw.ForwardedSpecPaths) > maxForwardedPaths {
		errs = append(errs, field.TooMany(p, len(fw.ForwardedSpecPaths), maxForwardedPaths))
	}
	owned := []string{"spec.suspend"}
	if fw.ManagedBy != nil {
		owned = append(owned, fw.ManagedBy.Path)
	}
	seen := sets.New[string]()
	for i, path := range fw.ForwardedSpecPaths {
		switch err := validateSpecPath(path); {
		case err != nil:
			errs = append(errs, field.Invalid(p.Index(i), path, err.Error()))
		case len(path) > maxSpecPath:
			errs = append(errs, field.TooLong(p.Index(i), path, maxSpecPath))
		case slices.Contains(owned, path):
			errs = append(errs, field.Forbidden(p.Index(i), fmt.Sprintf("%s is set by Kueue and Courier on each side; it cannot be forwarded", path)))
		case seen.Has(path):
			errs = append(errs, field.Duplicate(p.Index(i), path))
		default:
			seen.Insert(path)
		}
	}
	return errs
}

// ParseFrameworkName parses Kind.version.group, as in Job.v1.batch.
func ParseFrameworkName(name string) (schema.GroupVersionKind, error) {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) != 3 {
		return schema.GroupVersionKind{}, fmt.Errorf("must have the form Kind.version.group, such as Job.v1.batch")
	}
	gvk := schema.GroupVersionKind{Kind: parts[0], Version: parts[1], Group: parts[2]}
	if !pathSegment.MatchString(gvk.Kind) || strings.ToUpper(gvk.Kind[:1]) != gvk.Kind[:1] {
		return gvk, fmt.Errorf("kind %q must be a capitalised identifier, such as Job", gvk.Kind)
	}
	if msgs := validation.IsDNS1035Label(gvk.Version); len(msgs) > 0 {
		return gvk, fmt.Errorf("version %q: %s", gvk.Version, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(gvk.Group); len(msgs) > 0 {
		return gvk, fmt.Errorf("group %q: %s", gvk.Group, strings.Join(msgs, "; "))
	}
	return gvk, nil
}

func validateManagedBy(m *configv1alpha1.ManagedBy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if err := validateSpecPath(m.Path); err != nil {
		errs = append(errs, field.Invalid(p.Child("path"), m.Path, err.Error()))
	}
	if m.Value == "" || len(m.Value) > maxManagedByValue {
		errs = append(errs, field.Invalid(p.Child("value"), m.Value, fmt.Sprintf("must be 1 to %d characters", maxManagedByValue)))
	}
	return errs
}

// validateSpecPath accepts a dot-separated path below spec, such as
// spec.runPolicy.managedBy.
func validateSpecPath(path string) error {
	segments := strings.Split(path, ".")
	if len(segments) < 2 || segments[0] != "spec" {
		return fmt.Errorf("must be a dot-separated field path under spec, such as spec.managedBy")
	}
	for _, s := range segments[1:] {
		if !pathSegment.MatchString(s) {
			return fmt.Errorf("segment %q is not a field name", s)
		}
	}
	return nil
}

func validateStatusFields(fields []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fields) > maxStatusFields {
		errs = append(errs, field.TooMany(p, len(fields), maxStatusFields))
	}
	seen := sets.New[string]()
	for i, f := range fields {
		switch {
		case !pathSegment.MatchString(f):
			errs = append(errs, field.Invalid(p.Index(i), f, "must be the name of a top-level status field, such as conditions"))
		case seen.Has(f):
			errs = append(errs, field.Duplicate(p.Index(i), f))
		default:
			seen.Insert(f)
		}
	}
	return errs
}

func orMessage(msgs []string, fallback string) string {
	if len(msgs) == 0 {
		return fallback
	}
	return strings.Join(msgs, "; ")
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func durationString(d *metav1.Duration) string {
	if d == nil {
		return ""
	}
	return d.Duration.String()
}

// validateLostWorker checks the lost-worker policy, the fence and the
// self-fault settings, and that under the Fenced policy workerLostTimeout
// leaves the fence the time to stop a lost worker's jobs before they move.
func validateLostWorker(c *configv1alpha1.Configuration) field.ErrorList {
	var errs field.ErrorList
	switch c.LostWorkerPolicy {
	case courier.LostWorkerFenced, courier.LostWorkerTimeout, courier.LostWorkerNever:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("lostWorkerPolicy"), c.LostWorkerPolicy,
			[]courier.LostWorkerPolicy{courier.LostWorkerFenced, courier.LostWorkerTimeout, courier.LostWorkerNever}))
	}
	f, p := c.Fence, field.NewPath("fence")
	if msgs := validation.IsDNS1123Label(f.Namespace); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("namespace"), f.Namespace, strings.Join(msgs, "; ")))
	}
	for name, d := range map[string]*metav1.Duration{"timeout": f.Timeout, "heartbeatInterval": f.HeartbeatInterval} {
		if d == nil || d.Duration < time.Second {
			errs = append(errs, field.Invalid(p.Child(name), durationString(d), "must be at least 1s"))
		}
	}
	if f.StopGrace == nil || f.StopGrace.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("stopGrace"), durationString(f.StopGrace), "must not be negative"))
	}
	if f.HeartbeatInterval != nil && f.Timeout != nil && f.HeartbeatInterval.Duration >= time.Second && 3*f.HeartbeatInterval.Duration > f.Timeout.Duration {
		errs = append(errs, field.Invalid(p.Child("heartbeatInterval"), f.HeartbeatInterval.Duration.String(),
			fmt.Sprintf("must be at most a third of fence.timeout (%s), so that a lost renewal or two do not stop the worker's jobs", f.Timeout.Duration)))
	}
	if s := c.SelfFault; s.Share == nil || *s.Share < 1 || *s.Share > 100 {
		errs = append(errs, field.Invalid(field.NewPath("selfFault", "share"), deref(s.Share), "must be a percentage between 1 and 100"))
	}
	if s := c.SelfFault; s.Window == nil || s.Window.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("selfFault", "window"), durationString(s.Window), "must be a positive duration, such as 2m"))
	}
	if len(errs) > 0 || c.LostWorkerPolicy != courier.LostWorkerFenced || c.WorkerLostTimeout == nil {
		return errs
	}
	if need := configv1alpha1.MinFencedLostTimeout(f); c.WorkerLostTimeout.Duration < need {
		errs = append(errs, field.Invalid(field.NewPath("workerLostTimeout"), c.WorkerLostTimeout.Duration.String(),
			fmt.Sprintf("must be at least %s under lostWorkerPolicy Fenced: a lost worker's jobs move only once its fence must have stopped them "+
				"(the API server's request timeout %s and fence.timeout %s, with a clock error of %.0f%%, plus the fence's reaction %s and fence.stopGrace %s; docs/reliability.md); "+
				"raise it, or shorten fence.timeout or fence.stopGrace",
				need.Round(time.Second), configv1alpha1.HeartbeatRequestTimeout, f.Timeout.Duration, configv1alpha1.ClockRateError*100,
				configv1alpha1.FenceReaction, f.StopGrace.Duration)))
	}
	return errs
}
