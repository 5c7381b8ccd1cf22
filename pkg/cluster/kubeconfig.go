package cluster

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// ParseKubeconfig validates a worker's kubeconfig and returns the rest.Config
// of its current context. A kubeconfig Courier accepts is self-contained and
// secure: it must not skip TLS verification, use basic auth, run exec or
// auth-provider plugins, or reference files on Courier's disk.
func ParseKubeconfig(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig does not parse: %v.", err)
	}
	ctxName := cfg.CurrentContext
	kctx, ok := cfg.Contexts[ctxName]
	if ctxName == "" || !ok {
		return nil, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig has no current context; set current-context to one of its contexts.")
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, configError(courier.ReasonInvalidKubeconfig, "Context %q names cluster %q, which the kubeconfig does not define.", ctxName, kctx.Cluster)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, configError(courier.ReasonInvalidKubeconfig, "Context %q names user %q, which the kubeconfig does not define.", ctxName, kctx.AuthInfo)
	}
	if err := checkCluster(kctx.Cluster, cluster); err != nil {
		return nil, err
	}
	if err := checkUser(kctx.AuthInfo, user); err != nil {
		return nil, err
	}
	restConfig, err := clientcmd.NewNonInteractiveClientConfig(*cfg, ctxName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig is not usable: %v.", err)
	}
	return restConfig, nil
}

func checkCluster(name string, c *clientcmdapi.Cluster) error {
	switch {
	case c.Server == "":
		return configError(courier.ReasonInvalidKubeconfig, "Cluster %q has no server address.", name)
	case c.InsecureSkipTLSVerify:
		return configError(courier.ReasonInsecureKubeconfig, "Cluster %q sets insecure-skip-tls-verify; remove it and embed the API server's CA in certificate-authority-data.", name)
	case c.CertificateAuthority != "":
		return configError(courier.ReasonInvalidKubeconfig, "Cluster %q references the file %q for its CA; embed it in certificate-authority-data instead.", name, c.CertificateAuthority)
	}
	return nil
}

func checkUser(name string, u *clientcmdapi.AuthInfo) error {
	switch {
	case u.Exec != nil:
		return configError(courier.ReasonInvalidKubeconfig, "User %q runs the exec plugin %q, which Courier does not run; use a token or a client certificate embedded in the kubeconfig.", name, u.Exec.Command)
	case u.AuthProvider != nil:
		return configError(courier.ReasonInvalidKubeconfig, "User %q uses the auth-provider %q, which Courier does not run; use a token or a client certificate embedded in the kubeconfig.", name, u.AuthProvider.Name)
	case u.ClientCertificate != "":
		return configError(courier.ReasonInvalidKubeconfig, "User %q references the file %q for its client certificate; embed it in client-certificate-data instead.", name, u.ClientCertificate)
	case u.ClientKey != "":
		return configError(courier.ReasonInvalidKubeconfig, "User %q references the file %q for its client key; embed it in client-key-data instead.", name, u.ClientKey)
	case u.TokenFile != "":
		return configError(courier.ReasonInvalidKubeconfig, "User %q references the token file %q; put the token itself in the token field instead.", name, u.TokenFile)
	case u.Username != "" || u.Password != "":
		return configError(courier.ReasonInsecureKubeconfig, "User %q uses basic auth; use a token or a client certificate instead.", name)
	case u.Token == "" && len(u.ClientCertificateData) == 0:
		return configError(courier.ReasonInvalidKubeconfig, "User %q has no credentials; embed a token or client-certificate-data and client-key-data.", name)
	}
	return nil
}
