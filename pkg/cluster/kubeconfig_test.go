package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

func validKubeconfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["w"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "secret"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	return cfg
}

func TestParseKubeconfigRejects(t *testing.T) {
	cases := map[string]struct {
		mutate      func(*clientcmdapi.Config)
		raw         string
		wantReason  string
		wantMessage string
	}{
		"not YAML": {
			raw:         "{{{",
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "does not parse",
		},
		"no current context": {
			mutate:      func(c *clientcmdapi.Config) { c.CurrentContext = "" },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "no current context",
		},
		"current context undefined": {
			mutate:      func(c *clientcmdapi.Config) { c.CurrentContext = "other" },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "no current context",
		},
		"context names an undefined cluster": {
			mutate:      func(c *clientcmdapi.Config) { c.Contexts["c"].Cluster = "nope" },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: `names cluster "nope"`,
		},
		"context names an undefined user": {
			mutate:      func(c *clientcmdapi.Config) { c.Contexts["c"].AuthInfo = "nope" },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: `names user "nope"`,
		},
		"no server": {
			mutate:      func(c *clientcmdapi.Config) { c.Clusters["w"].Server = "" },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "no server address",
		},
		"insecure-skip-tls-verify": {
			mutate: func(c *clientcmdapi.Config) {
				c.Clusters["w"].InsecureSkipTLSVerify = true
				c.Clusters["w"].CertificateAuthorityData = nil
			},
			wantReason:  courier.ReasonInsecureKubeconfig,
			wantMessage: "insecure-skip-tls-verify",
		},
		"CA file": {
			mutate:      func(c *clientcmdapi.Config) { c.Clusters["w"].CertificateAuthority = "/etc/ca.crt" },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: `references the file "/etc/ca.crt" for its CA`,
		},
		"exec plugin not allowed": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1"}}
			},
			wantReason:  courier.ReasonPluginNotAllowed,
			wantMessage: `runs the exec plugin "gke-gcloud-auth-plugin", which the Configuration does not allow. To let Courier run it, list it under workerCredentials.plugins`,
		},
		"exec plugin of an allowed name at another path": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/tmp/aws", APIVersion: "client.authentication.k8s.io/v1"}}
			},
			wantReason:  courier.ReasonPluginNotAllowed,
			wantMessage: `exec plugin "/tmp/aws"`,
		},
		"exec plugin that needs a terminal": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1",
					InteractiveMode: clientcmdapi.AlwaysExecInteractiveMode}}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "interactiveMode Always",
		},
		"exec plugin of an unknown version": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1alpha1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: `apiVersion "client.authentication.k8s.io/v1alpha1"`,
		},
		"exec plugin beside a token": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1"}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "both an exec plugin and an embedded credential",
		},
		"auth-provider plugin": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
			},
			wantReason:  courier.ReasonPluginNotAllowed,
			wantMessage: `auth-provider "gcp"`,
		},
		"client certificate file": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: "/etc/client.crt", ClientKeyData: []byte("k")}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "client certificate",
		},
		"client key file": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKey: "/etc/client.key"}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "client key",
		},
		"token file": {
			mutate:      func(c *clientcmdapi.Config) { c.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/token"} },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: `token file "/var/run/token"`,
		},
		"basic auth": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Username: "admin", Password: "hunter2"}
			},
			wantReason:  courier.ReasonInsecureKubeconfig,
			wantMessage: "basic auth",
		},
		"no credentials": {
			mutate:      func(c *clientcmdapi.Config) { c.AuthInfos["u"] = &clientcmdapi.AuthInfo{} },
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "has no credentials",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.mutate != nil {
				cfg := validKubeconfig()
				tc.mutate(cfg)
				var err error
				if data, err = clientcmd.Write(*cfg); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ParseKubeconfig(data, awsPlugin())
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("ParseKubeconfig() error = %v, want an *Error", err)
			}
			if diff := cmp.Diff(tc.wantReason, cerr.Reason); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
			if !strings.Contains(cerr.Message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", cerr.Message, tc.wantMessage)
			}
			if !cerr.IsConfiguration() {
				t.Errorf("a kubeconfig problem must be a configuration error")
			}
			if strings.Contains(cerr.Message, "secret") || strings.Contains(cerr.Message, "hunter2") {
				t.Errorf("message %q leaks a credential", cerr.Message)
			}
		})
	}
}

func awsPlugin() *Plugins {
	return NewPlugins(&configv1alpha1.WorkerCredentials{PluginTimeout: &metav1.Duration{Duration: 3 * time.Second},
		Plugins: []configv1alpha1.CredentialPlugin{{Name: "aws", Command: "/usr/local/bin/aws", Env: []configv1alpha1.PluginEnvVar{{Name: "AWS_PROFILE", Value: "courier"}}}}})
}

func TestParseKubeconfigAccepts(t *testing.T) {
	notAfter := time.Date(2031, 5, 1, 12, 0, 0, 0, time.UTC)
	cert := selfSignedCert(t, notAfter)
	cases := map[string]struct {
		mutate        func(*clientcmdapi.Config)
		wantExpiresAt time.Time
		wantPlugin    *Plugin
	}{
		"bearer token": {mutate: func(*clientcmdapi.Config) {}},
		"embedded client certificate": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: []byte("key")}
			},
			wantExpiresAt: notAfter,
		},
		"bound ServiceAccount token": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"].Token = jwt(`{"exp":1924992000,"sub":"system:serviceaccount:courier:courier"}`)
			},
			wantExpiresAt: time.Unix(1924992000, 0),
		},
		"JWT without exp": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"].Token = jwt(`{"sub":"system:serviceaccount:courier:courier"}`)
			},
		},
		"exec plugin by name": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "gpu-1"}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
					Env: []clientcmdapi.ExecEnvVar{{Name: "AWS_REGION", Value: "eu-west-1"}}, APIVersion: "client.authentication.k8s.io/v1beta1"}}
			},
			wantPlugin: &Plugin{Name: "aws", Command: "/usr/local/bin/aws", Args: []string{"eks", "get-token", "--cluster-name", "gpu-1"},
				Env: []string{"AWS_REGION=eu-west-1", "AWS_PROFILE=courier"}, APIVersion: "client.authentication.k8s.io/v1beta1", Timeout: 3 * time.Second},
		},
		"exec plugin by path, told the cluster": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/usr/local/bin/aws", APIVersion: "client.authentication.k8s.io/v1",
					ProvideClusterInfo: true, InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}}
			},
			wantPlugin: &Plugin{Name: "aws", Command: "/usr/local/bin/aws", Env: []string{"AWS_PROFILE=courier"}, APIVersion: "client.authentication.k8s.io/v1",
				Cluster: &clientauthentication.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}, Timeout: 3 * time.Second},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := validKubeconfig()
			tc.mutate(cfg)
			data, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseKubeconfig(data, awsPlugin())
			if err != nil {
				t.Fatalf("ParseKubeconfig() = %v", err)
			}
			if diff := cmp.Diff("https://127.0.0.1:6443", got.Config.Host); diff != "" {
				t.Errorf("host (-want +got):\n%s", diff)
			}
			if got.Config.ExecProvider != nil {
				t.Errorf("the rest.Config keeps its exec provider; Courier runs plugins itself")
			}
			if !got.ExpiresAt.Equal(tc.wantExpiresAt) {
				t.Errorf("ExpiresAt = %s, want %s", got.ExpiresAt, tc.wantExpiresAt)
			}
			if diff := cmp.Diff(tc.wantPlugin, got.Plugin, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plugin (-want +got):\n%s", diff)
			}
		})
	}
}

func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + "." + enc([]byte("signature"))
}

func selfSignedCert(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "courier"}, NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
