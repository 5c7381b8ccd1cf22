package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/pkg/apis/clientauthentication"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Target is how Courier reaches one worker: a rest.Config, and the exec
// credential plugin that hands out its credential, if any.
type Target struct {
	// Config is the worker's address, CA and, without a plugin, its
	// credential. It has no ExecProvider: Courier runs plugins itself, so
	// that each run is bounded and its expiry known.
	Config *rest.Config
	// Plugin hands out the credential; nil when Config holds it.
	Plugin *Plugin
	// ExpiresAt is when the credential Config holds expires; zero when it
	// does not, as far as Courier can tell.
	ExpiresAt time.Time
	// Key tells targets apart: Cache.Connect keeps a connection whose key
	// has not changed.
	Key [sha256.Size]byte
}

// Plugin is one exec credential plugin as Courier runs it for one worker.
type Plugin struct {
	// Name is the plugin's name in the Configuration.
	Name string
	// Command is the binary's absolute path.
	Command string
	Args    []string
	// Env is added, as NAME=value, to the environment Courier runs in.
	Env []string
	// APIVersion is the ExecCredential version the plugin speaks.
	APIVersion string
	// Cluster, when set, is passed to the plugin in KUBERNETES_EXEC_INFO.
	Cluster *clientauthentication.Cluster
	// Timeout bounds each run.
	Timeout time.Duration
}

// Plugins are the exec credential plugins the Configuration allows, by
// name and absolute path: nothing else runs.
type Plugins struct {
	list    []configv1alpha1.CredentialPlugin
	timeout time.Duration
}

// NewPlugins returns the plugins of a defaulted workerCredentials.
func NewPlugins(w *configv1alpha1.WorkerCredentials) *Plugins {
	if w == nil {
		return &Plugins{timeout: configv1alpha1.DefaultPluginTimeout}
	}
	timeout := configv1alpha1.DefaultPluginTimeout
	if w.PluginTimeout != nil {
		timeout = w.PluginTimeout.Duration
	}
	return &Plugins{list: w.Plugins, timeout: timeout}
}

// Names lists the allowed plugins' names, in the Configuration's order.
func (p *Plugins) Names() []string {
	if p == nil {
		return nil
	}
	names := make([]string, 0, len(p.list))
	for _, plugin := range p.list {
		names = append(names, plugin.Name)
	}
	return names
}

func (p *Plugins) byName(name string) (configv1alpha1.CredentialPlugin, bool) {
	if p != nil {
		for _, plugin := range p.list {
			if plugin.Name == name {
				return plugin, true
			}
		}
	}
	return configv1alpha1.CredentialPlugin{}, false
}

// forKubeconfig returns the plugin a kubeconfig user's exec section runs:
// the allowed plugin whose name or path is its command. The kubeconfig
// gives the arguments, version and whether to pass the cluster; the
// Configuration gives the path, and environment on top of the
// kubeconfig's.
func (p *Plugins) forKubeconfig(user string, e *clientcmdapi.ExecConfig, config *rest.Config) (*Plugin, error) {
	allowed, err := p.allowed(user, e)
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(e.Env)+len(allowed.Env))
	for _, v := range e.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	for _, v := range allowed.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	return p.plugin(allowed.Name, allowed.Command, e.Args, env, e.APIVersion, e.ProvideClusterInfo, config)
}

// allowed returns the plugin a kubeconfig user's exec section may run.
func (p *Plugins) allowed(user string, e *clientcmdapi.ExecConfig) (*configv1alpha1.CredentialPlugin, error) {
	var allowed *configv1alpha1.CredentialPlugin
	if p != nil {
		for i := range p.list {
			if e.Command == p.list[i].Command || e.Command == p.list[i].Name {
				allowed = &p.list[i]
				break
			}
		}
	}
	if allowed == nil {
		return nil, configError(courier.ReasonPluginNotAllowed,
			"User %q runs the exec plugin %q, which the Configuration does not allow. To let Courier run it, list it under workerCredentials.plugins with its name and absolute path (such as {name: %s, command: /usr/local/bin/%s}) and restart Courier; or embed a token or client certificate in the kubeconfig.",
			user, e.Command, baseName(e.Command), baseName(e.Command))
	}
	if e.InteractiveMode == clientcmdapi.AlwaysExecInteractiveMode {
		return nil, configError(courier.ReasonInvalidKubeconfig,
			"User %q runs the exec plugin %q with interactiveMode Always; Courier runs plugins without a terminal: set it to Never or IfAvailable.", user, allowed.Name)
	}
	return allowed, nil
}

// plugin resolves what to run, with the cluster's information from the
// rest.Config if the plugin is to be told it.
func (p *Plugins) plugin(name, command string, args, env []string, apiVersion string, clusterInfo bool, config *rest.Config) (*Plugin, error) {
	if !slices.Contains(execVersions, apiVersion) {
		return nil, configError(courier.ReasonInvalidKubeconfig,
			"The exec plugin %q is to speak apiVersion %q; Courier speaks %s.", name, apiVersion, strings.Join(execVersions, " and "))
	}
	plugin := &Plugin{Name: name, Command: command, Args: slices.Clone(args), Env: env, APIVersion: apiVersion, Timeout: p.timeout}
	if clusterInfo {
		cluster, err := rest.ConfigToExecCluster(config)
		if err != nil {
			return nil, configError(courier.ReasonInvalidKubeconfig, "The cluster's information for the exec plugin %q does not encode: %v.", name, err)
		}
		plugin.Cluster = cluster
	}
	return plugin, nil
}

// execVersions are the ExecCredential versions Courier speaks with plugins.
var execVersions = []string{"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}

// key fingerprints what reaching a worker depends on.
func key(parts ...any) [sha256.Size]byte {
	data, err := json.Marshal(parts)
	if err != nil {
		// Only plain data is fingerprinted; a failure is a bug here.
		panic(fmt.Sprintf("fingerprinting a worker's target: %v", err))
	}
	return sha256.Sum256(data)
}

func baseName(command string) string {
	if i := strings.LastIndex(command, "/"); i >= 0 {
		return command[i+1:]
	}
	return command
}
