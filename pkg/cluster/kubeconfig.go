package cluster

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// ParseKubeconfig validates a worker's kubeconfig and returns the target
// of its current context. A kubeconfig Courier accepts is self-contained
// and secure: it must not skip TLS verification, use basic auth, run
// auth-provider plugins, or reference files on Courier's disk; it may run
// an exec plugin only if plugins allow it by name or path.
func ParseKubeconfig(data []byte, plugins *Plugins) (Target, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return Target{}, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig does not parse: %v.", err)
	}
	ctxName := cfg.CurrentContext
	kctx, ok := cfg.Contexts[ctxName]
	if ctxName == "" || !ok {
		return Target{}, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig has no current context; set current-context to one of its contexts.")
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return Target{}, configError(courier.ReasonInvalidKubeconfig, "Context %q names cluster %q, which the kubeconfig does not define.", ctxName, kctx.Cluster)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return Target{}, configError(courier.ReasonInvalidKubeconfig, "Context %q names user %q, which the kubeconfig does not define.", ctxName, kctx.AuthInfo)
	}
	if err := checkCluster(kctx.Cluster, cluster); err != nil {
		return Target{}, err
	}
	if err := checkUser(kctx.AuthInfo, user); err != nil {
		return Target{}, err
	}
	if user.Exec != nil {
		// Named before anything else: it is what a person must allow.
		if _, err := plugins.allowed(kctx.AuthInfo, user.Exec); err != nil {
			return Target{}, err
		}
	}
	restConfig, err := clientcmd.NewNonInteractiveClientConfig(*cfg, ctxName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return Target{}, configError(courier.ReasonInvalidKubeconfig, "The kubeconfig is not usable: %v.", err)
	}
	t := Target{Config: restConfig, Key: sha256.Sum256(data)}
	if user.Exec != nil {
		if t.Plugin, err = plugins.forKubeconfig(kctx.AuthInfo, user.Exec, restConfig); err != nil {
			return Target{}, err
		}
		restConfig.ExecProvider = nil
		return t, nil
	}
	t.ExpiresAt = embeddedExpiry(user)
	return t, nil
}

// embeddedExpiry reads when a kubeconfig's own credential expires: a JWT's
// exp claim (a bound ServiceAccount token has one), or the client
// certificate's notAfter. Zero when it cannot tell: an opaque token, a
// legacy ServiceAccount token, or what does not parse, which the worker
// judges.
func embeddedExpiry(u *clientcmdapi.AuthInfo) time.Time {
	if u.Token != "" {
		return tokenExpiry(u.Token)
	}
	if block, _ := pem.Decode(u.ClientCertificateData); block != nil {
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			return cert.NotAfter
		}
	}
	return time.Time{}
}

// tokenExpiry reads a JWT's exp claim without verifying the token: only
// the worker can, and it says so by refusing it. Zero for a token that is
// not a JWT, or has no exp.
func tokenExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}
	}
	exp, err := claims.Exp.Float64()
	if err != nil || exp <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(exp), 0)
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
	case u.AuthProvider != nil:
		return configError(courier.ReasonPluginNotAllowed, "User %q uses the auth-provider %q, which Courier does not run; use an exec plugin the Configuration allows (workerCredentials.plugins), or a token or a client certificate embedded in the kubeconfig.", name, u.AuthProvider.Name)
	case u.ClientCertificate != "":
		return configError(courier.ReasonInvalidKubeconfig, "User %q references the file %q for its client certificate; embed it in client-certificate-data instead.", name, u.ClientCertificate)
	case u.ClientKey != "":
		return configError(courier.ReasonInvalidKubeconfig, "User %q references the file %q for its client key; embed it in client-key-data instead.", name, u.ClientKey)
	case u.TokenFile != "":
		return configError(courier.ReasonInvalidKubeconfig, "User %q references the token file %q; put the token itself in the token field instead.", name, u.TokenFile)
	case u.Username != "" || u.Password != "":
		return configError(courier.ReasonInsecureKubeconfig, "User %q uses basic auth; use a token or a client certificate instead.", name)
	case u.Exec != nil && (u.Token != "" || len(u.ClientCertificateData) > 0):
		return configError(courier.ReasonInvalidKubeconfig, "User %q has both an exec plugin and an embedded credential; keep one.", name)
	case u.Exec != nil:
		return nil
	case u.Token == "" && len(u.ClientCertificateData) == 0:
		return configError(courier.ReasonInvalidKubeconfig, "User %q has no credentials; embed a token or client-certificate-data and client-key-data.", name)
	}
	return nil
}
