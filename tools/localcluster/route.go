package localcluster

import (
	"fmt"
	"net/url"

	"k8s.io/client-go/tools/clientcmd"
)

// APIServerAddress is the host:port of a cluster's API server, from its
// kubeconfig.
func (e *Env) APIServerAddress(cluster string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig(cluster))
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig of %s: %w", cluster, err)
	}
	current, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[current.Cluster] == nil {
		return "", fmt.Errorf("the kubeconfig of %s has no cluster for its current context %q", cluster, cfg.CurrentContext)
	}
	u, err := url.Parse(cfg.Clusters[current.Cluster].Server)
	if err != nil {
		return "", fmt.Errorf("parsing the server of %s: %w", cluster, err)
	}
	return u.Host, nil
}

// RouteCourier has Courier reach worker at addr (host:port) instead of its
// API server: a proxy that forwards to it, so that Courier's link alone
// can be broken. Set before Configure, it goes into the kubeconfig Secret
// Courier reads; the worker's own controllers and everything else keep
// reaching the API server directly.
func (e *Env) RouteCourier(worker, addr string) {
	if e.courierRoutes == nil {
		e.courierRoutes = map[string]string{}
	}
	e.courierRoutes[worker] = addr
}

// WithServer returns kubeconfig with every cluster's server at addr
// (host:port), its scheme and TLS settings kept: a TCP proxy that does not
// terminate TLS is reached with the server's own certificate, which names
// the loopback address.
func WithServer(kubeconfig []byte, addr string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading a kubeconfig: %w", err)
	}
	for name, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, fmt.Errorf("parsing the server of cluster %s: %w", name, err)
		}
		u.Host = addr
		c.Server = u.String()
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return data, nil
}
