package cluster

import (
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

// ProfileTarget returns the target of a worker a ClusterProfile describes:
// the first of the Configuration's plugins, in its order, that one of the
// profile's access providers names, with the provider's server and CA.
// The rest.Config is built by the cluster inventory's access library,
// which also applies the arguments and environment the profile gives the
// plugin, as the plugin's profileArgs and profileEnv allow; Courier then
// runs the plugin itself.
func (p *Plugins) ProfileTarget(cp *inventory.ClusterProfile) (Target, error) {
	ref := cp.Namespace + "/" + cp.Name
	offered := offeredProviders(cp)
	var chosen *inventory.AccessProvider
	for _, name := range p.Names() {
		if i := slices.IndexFunc(offered, func(a inventory.AccessProvider) bool { return a.Name == name }); i >= 0 {
			chosen = &offered[i]
			break
		}
	}
	if chosen == nil {
		names := make([]string, 0, len(offered))
		for _, a := range offered {
			names = append(names, a.Name)
		}
		if len(names) == 0 {
			return Target{}, configError(courier.ReasonNoAccessProvider,
				"ClusterProfile %s offers no access provider in its status yet; its cluster manager publishes them.", ref)
		}
		return Target{}, configError(courier.ReasonNoAccessProvider,
			"ClusterProfile %s offers the access providers %s, and the Configuration's workerCredentials.plugins serves none of them (%s). List a plugin named as one of them, with its absolute path, and restart Courier.",
			ref, strings.Join(names, ", "), orNone(p.Names()))
	}
	c := &chosen.Cluster
	switch {
	case c.Server == "":
		return Target{}, configError(courier.ReasonNoAccessProvider, "ClusterProfile %s: access provider %q gives no server address.", ref, chosen.Name)
	case c.InsecureSkipTLSVerify:
		return Target{}, configError(courier.ReasonNoAccessProvider,
			"ClusterProfile %s: access provider %q sets insecure-skip-tls-verify; Courier does not reach workers without verifying them. Give certificate-authority-data instead.", ref, chosen.Name)
	case c.CertificateAuthority != "":
		return Target{}, configError(courier.ReasonNoAccessProvider,
			"ClusterProfile %s: access provider %q references the CA file %q; give certificate-authority-data instead.", ref, chosen.Name, c.CertificateAuthority)
	}
	plugin, _ := p.byName(chosen.Name)
	providers := access.New([]access.Provider{{
		Name: plugin.Name,
		ExecConfig: &clientcmdapi.ExecConfig{
			Command:            plugin.Command,
			Args:               slices.Clone(plugin.Args),
			Env:                execEnv(plugin.Env),
			APIVersion:         plugin.APIVersion,
			ProvideClusterInfo: plugin.ProvideClusterInfo != nil && *plugin.ProvideClusterInfo,
			InteractiveMode:    clientcmdapi.NeverExecInteractiveMode,
		},
		ProfileSourcedCLIArgsPolicy: access.ProfileSourcedCLIArgsPolicy(plugin.ProfileArgs),
		ProfileSourcedEnvVarsPolicy: access.ProfileSourcedEnvVarsPolicy(plugin.ProfileEnv),
	}})
	// The library reads only the provider chosen above from this copy.
	only := cp.DeepCopy()
	only.Status.AccessProviders, only.Status.CredentialProviders = []inventory.AccessProvider{*chosen}, nil
	config, err := providers.BuildConfigFromCP(only)
	if err != nil {
		return Target{}, configError(courier.ReasonNoAccessProvider, "ClusterProfile %s: access provider %q is not usable: %v.", ref, chosen.Name, err)
	}
	exec := config.ExecProvider
	config.ExecProvider = nil
	env := make([]string, 0, len(exec.Env))
	for _, v := range exec.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	// The library leaves environment variables in a map's order.
	slices.Sort(env)
	resolved, err := p.plugin(plugin.Name, exec.Command, exec.Args, env, exec.APIVersion, exec.ProvideClusterInfo, withExec(config, exec))
	if err != nil {
		return Target{}, err
	}
	return Target{Config: config, Plugin: resolved, Key: key(ref, chosen, resolved)}, nil
}

// offeredProviders lists a profile's access providers, with those of the
// deprecated credentialProviders that accessProviders does not name.
func offeredProviders(cp *inventory.ClusterProfile) []inventory.AccessProvider {
	offered := slices.Clone(cp.Status.AccessProviders)
	for _, c := range cp.Status.CredentialProviders {
		if !slices.ContainsFunc(offered, func(a inventory.AccessProvider) bool { return a.Name == c.Name }) {
			offered = append(offered, c)
		}
	}
	return offered
}

func execEnv(vars []configv1alpha1.PluginEnvVar) []clientcmdapi.ExecEnvVar {
	out := make([]clientcmdapi.ExecEnvVar, 0, len(vars))
	for _, v := range vars {
		out = append(out, clientcmdapi.ExecEnvVar(v))
	}
	return out
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "it lists no plugin"
	}
	return "it lists " + strings.Join(names, ", ")
}

// withExec returns a copy of config with its exec provider, from which the
// cluster's information the plugin is to be told is read.
func withExec(config *rest.Config, exec *clientcmdapi.ExecConfig) *rest.Config {
	c := rest.CopyConfig(config)
	c.ExecProvider = exec
	return c
}
