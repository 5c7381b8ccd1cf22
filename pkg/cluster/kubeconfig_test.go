package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
		"exec plugin": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1"}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: `exec plugin "aws"`,
		},
		"auth-provider plugin": {
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
			},
			wantReason:  courier.ReasonInvalidKubeconfig,
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
			_, err := ParseKubeconfig(data)
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

func TestParseKubeconfigAccepts(t *testing.T) {
	cases := map[string]struct {
		mutate func(*clientcmdapi.Config)
	}{
		"bearer token": {mutate: func(*clientcmdapi.Config) {}},
		"embedded client certificate": {mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := validKubeconfig()
			tc.mutate(cfg)
			data, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseKubeconfig(data)
			if err != nil {
				t.Fatalf("ParseKubeconfig() = %v", err)
			}
			if diff := cmp.Diff("https://127.0.0.1:6443", got.Host); diff != "" {
				t.Errorf("host (-want +got):\n%s", diff)
			}
		})
	}
}
