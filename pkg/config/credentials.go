package config

import (
	"path/filepath"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

const (
	maxPlugins    = 32
	maxPluginName = 253
	maxPluginList = 64
	// A plugin may need to reach its cloud's token service; five minutes
	// is already longer than any worker's connection should wait.
	maxPluginTimeout = 5 * time.Minute
)

// A plugin's name is what ClusterProfiles give their access providers.
var pluginName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// An environment variable's name, as a shell spells it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// The ExecCredential versions Courier speaks with plugins.
var pluginAPIVersions = []string{"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}

// validateWorkerCredentials checks a defaulted workerCredentials: bounded
// timings, and plugins that are distinct, named as ClusterProfiles name
// access providers, and at absolute, clean paths, since nothing is looked
// up in PATH.
func validateWorkerCredentials(w *configv1alpha1.WorkerCredentials, p *field.Path) field.ErrorList {
	if w == nil {
		return field.ErrorList{field.Required(p, "the worker credential settings must be set")}
	}
	var errs field.ErrorList
	if d := w.ExpiryWarning; d == nil || d.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("expiryWarning"), durationString(d), "must not be negative, such as 168h"))
	}
	if d := w.PluginTimeout; d == nil || d.Duration < time.Second || d.Duration > maxPluginTimeout {
		errs = append(errs, field.Invalid(p.Child("pluginTimeout"), durationString(d), "must be between 1s and 5m, such as 20s"))
	}
	if len(w.Plugins) > maxPlugins {
		errs = append(errs, field.TooMany(p.Child("plugins"), len(w.Plugins), maxPlugins))
	}
	names := sets.New[string]()
	for i, plugin := range w.Plugins {
		pp := p.Child("plugins").Index(i)
		switch {
		case len(plugin.Name) > maxPluginName:
			errs = append(errs, field.TooLong(pp.Child("name"), plugin.Name, maxPluginName))
		case !pluginName.MatchString(plugin.Name):
			errs = append(errs, field.Invalid(pp.Child("name"), plugin.Name, "must be letters, digits, '-', '_' and '.', as ClusterProfiles name access providers"))
		case names.Has(plugin.Name):
			errs = append(errs, field.Duplicate(pp.Child("name"), plugin.Name))
		default:
			names.Insert(plugin.Name)
		}
		errs = append(errs, validatePlugin(plugin, pp)...)
	}
	return errs
}

func validatePlugin(plugin configv1alpha1.CredentialPlugin, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch c := plugin.Command; {
	case len(c) > maxPath:
		errs = append(errs, field.TooLong(p.Child("command"), c, maxPath))
	case !filepath.IsAbs(c) || filepath.Clean(c) != c:
		errs = append(errs, field.Invalid(p.Child("command"), c, "must be the plugin binary's absolute, clean path, such as /usr/local/bin/gke-gcloud-auth-plugin; nothing is looked up in PATH"))
	}
	if len(plugin.Args) > maxPluginList {
		errs = append(errs, field.TooMany(p.Child("args"), len(plugin.Args), maxPluginList))
	}
	if len(plugin.Env) > maxPluginList {
		errs = append(errs, field.TooMany(p.Child("env"), len(plugin.Env), maxPluginList))
	}
	seen := sets.New[string]()
	for i, env := range plugin.Env {
		switch {
		case !envName.MatchString(env.Name):
			errs = append(errs, field.Invalid(p.Child("env").Index(i).Child("name"), env.Name, "must be an environment variable's name"))
		case env.Name == "KUBERNETES_EXEC_INFO":
			errs = append(errs, field.Forbidden(p.Child("env").Index(i).Child("name"), "Courier sets KUBERNETES_EXEC_INFO itself"))
		case seen.Has(env.Name):
			errs = append(errs, field.Duplicate(p.Child("env").Index(i).Child("name"), env.Name))
		default:
			seen.Insert(env.Name)
		}
	}
	if !sets.New(pluginAPIVersions...).Has(plugin.APIVersion) {
		errs = append(errs, field.NotSupported(p.Child("apiVersion"), plugin.APIVersion, pluginAPIVersions))
	}
	if s := plugin.ProfileArgs; s != "Ignore" && s != "Append" {
		errs = append(errs, field.NotSupported(p.Child("profileArgs"), s, []string{"Ignore", "Append"}))
	}
	if s := plugin.ProfileEnv; s != "Ignore" && s != "AppendIfNotExists" && s != "Replace" {
		errs = append(errs, field.NotSupported(p.Child("profileEnv"), s, []string{"Ignore", "AppendIfNotExists", "Replace"}))
	}
	if plugin.ProvideClusterInfo == nil {
		errs = append(errs, field.Required(p.Child("provideClusterInfo"), "true passes the worker's server and CA to the plugin"))
	}
	return errs
}

func validatePlacementDecisions(d *configv1alpha1.PlacementDecisions, p *field.Path) field.ErrorList {
	if d == nil || d.Enable == nil {
		return field.ErrorList{field.Required(p.Child("enable"), "true publishes each placement as a PlacementDecision")}
	}
	return nil
}
