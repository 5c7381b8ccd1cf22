package localcluster

import (
	"fmt"
	"path/filepath"
)

// secretReader is the credential plugin the values file lists for
// ClusterProfile workers, and its binary in bin/ (make build).
const secretReader = "secretreader"

// secretReaderSettings are the chart values that run the values file's
// secretreader plugin from bin/ rather than from the image's /plugins, as
// Courier's own ServiceAccount: a process outside a Pod finds its cluster
// through KUBECONFIG, whose context names Courier's namespace, where the
// plugin reads the workers' tokens. Helm replaces a list it is given an
// index of, so every field the values file sets is set again; installChart
// sets strings only, so the plugin's booleans keep Courier's defaults.
func secretReaderSettings(bin, kubeconfig string) ([]string, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, fmt.Errorf("locating bin/: %w", err)
	}
	if kubeconfig, err = filepath.Abs(kubeconfig); err != nil {
		return nil, fmt.Errorf("locating Courier's kubeconfig: %w", err)
	}
	p := "configuration.workerCredentials.plugins[0]."
	return []string{
		p + "name=" + secretReader,
		p + "command=" + filepath.Join(bin, secretReader),
		p + "env[0].name=KUBECONFIG",
		p + "env[0].value=" + kubeconfig,
	}, nil
}
