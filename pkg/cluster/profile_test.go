package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/utils/ptr"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

func profile(providers ...inventory.AccessProvider) *inventory.ClusterProfile {
	return &inventory.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "gpu-1"},
		Status:     inventory.ClusterProfileStatus{AccessProviders: providers},
	}
}

func provider(name string, mutate ...func(*clientcmdv1.Cluster)) inventory.AccessProvider {
	a := inventory.AccessProvider{Name: name, Cluster: clientcmdv1.Cluster{Server: "https://gpu-1:6443", CertificateAuthorityData: []byte("ca")}}
	for _, m := range mutate {
		m(&a.Cluster)
	}
	return a
}

func extension(name, raw string) func(*clientcmdv1.Cluster) {
	return func(c *clientcmdv1.Cluster) {
		c.Extensions = append(c.Extensions, clientcmdv1.NamedExtension{Name: name, Extension: runtime.RawExtension{Raw: []byte(raw)}})
	}
}

func TestProfileTarget(t *testing.T) {
	plugins := func(list ...configv1alpha1.CredentialPlugin) *Plugins {
		w := &configv1alpha1.WorkerCredentials{PluginTimeout: &metav1.Duration{Duration: 7 * time.Second}, Plugins: list}
		configv1alpha1.SetDefaults(&configv1alpha1.Configuration{WorkerCredentials: w})
		return NewPlugins(w)
	}
	google := configv1alpha1.CredentialPlugin{Name: "google", Command: "/usr/bin/gke-gcloud-auth-plugin"}
	ocm := configv1alpha1.CredentialPlugin{Name: "open-cluster-management", Command: "/opt/ocm/cp-creds", Args: []string{"--sa=courier"},
		Env: []configv1alpha1.PluginEnvVar{{Name: "B", Value: "plugin"}}, ProfileArgs: "Append", ProfileEnv: "Replace", ProvideClusterInfo: ptr.To(false)}
	cases := map[string]struct {
		plugins     *Plugins
		profile     *inventory.ClusterProfile
		want        *Plugin
		wantMessage string
		wantReason  string
	}{
		"the first plugin in the Configuration's order that the profile offers": {
			plugins: plugins(google, ocm),
			profile: profile(provider("open-cluster-management"), provider("google")),
			want: &Plugin{Name: "google", Command: "/usr/bin/gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1", Timeout: 7 * time.Second,
				Cluster: &clientauthentication.Cluster{Server: "https://gpu-1:6443", CertificateAuthorityData: []byte("ca")}},
		},
		"the profile's arguments and environment, as the plugin allows": {
			plugins: plugins(ocm),
			profile: profile(provider("open-cluster-management",
				extension("clusterprofiles.multicluster.x-k8s.io/exec/additional-args", `["--cluster=gpu-1"]`),
				extension("clusterprofiles.multicluster.x-k8s.io/exec/additional-envs", `{"A":"profile","B":"profile"}`))),
			want: &Plugin{Name: "open-cluster-management", Command: "/opt/ocm/cp-creds", Args: []string{"--sa=courier", "--cluster=gpu-1"},
				Env: []string{"A=profile", "B=profile"}, APIVersion: "client.authentication.k8s.io/v1", Timeout: 7 * time.Second},
		},
		"the profile's arguments ignored by default": {
			plugins: plugins(google),
			profile: profile(provider("google", extension("clusterprofiles.multicluster.x-k8s.io/exec/additional-args", `["--evil"]`),
				extension("client.authentication.k8s.io/exec", `{"audience":"courier"}`))),
			want: &Plugin{Name: "google", Command: "/usr/bin/gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1", Timeout: 7 * time.Second,
				Cluster: &clientauthentication.Cluster{Server: "https://gpu-1:6443", CertificateAuthorityData: []byte("ca"),
					Config: &runtime.Unknown{Raw: []byte(`{"audience":"courier"}`), ContentType: "application/json"}}},
		},
		"the deprecated credentialProviders": {
			plugins: plugins(google),
			profile: &inventory.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "gpu-1"},
				Status: inventory.ClusterProfileStatus{CredentialProviders: []inventory.AccessProvider{provider("google")}}},
			want: &Plugin{Name: "google", Command: "/usr/bin/gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1", Timeout: 7 * time.Second,
				Cluster: &clientauthentication.Cluster{Server: "https://gpu-1:6443", CertificateAuthorityData: []byte("ca")}},
		},
		"no access provider yet": {
			plugins:     plugins(google),
			profile:     profile(),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: "ClusterProfile fleet/gpu-1 offers no access provider in its status yet",
		},
		"no provider a plugin serves": {
			plugins:     plugins(google),
			profile:     profile(provider("azure"), provider("secretreader")),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: "ClusterProfile fleet/gpu-1 offers the access providers azure, secretreader, and the Configuration's workerCredentials.plugins serves none of them (it lists google)",
		},
		"no plugin at all": {
			plugins:     plugins(),
			profile:     profile(provider("azure")),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: "serves none of them (it lists no plugin)",
		},
		"no server": {
			plugins:     plugins(google),
			profile:     profile(provider("google", func(c *clientcmdv1.Cluster) { c.Server = "" })),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: `access provider "google" gives no server address`,
		},
		"no TLS verification": {
			plugins:     plugins(google),
			profile:     profile(provider("google", func(c *clientcmdv1.Cluster) { c.InsecureSkipTLSVerify = true })),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: `access provider "google" sets insecure-skip-tls-verify`,
		},
		"a CA file": {
			plugins:     plugins(google),
			profile:     profile(provider("google", func(c *clientcmdv1.Cluster) { c.CertificateAuthority = "/etc/ca.crt" })),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: `references the CA file "/etc/ca.crt"`,
		},
		"profile arguments that do not parse": {
			plugins:     plugins(ocm),
			profile:     profile(provider("open-cluster-management", extension("clusterprofiles.multicluster.x-k8s.io/exec/additional-args", `{not a list`))),
			wantReason:  courier.ReasonNoAccessProvider,
			wantMessage: `access provider "open-cluster-management" is not usable`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.plugins.ProfileTarget(tc.profile)
			if tc.wantReason != "" {
				var cerr *Error
				if !errors.As(err, &cerr) || cerr.Reason != tc.wantReason || !strings.Contains(cerr.Message, tc.wantMessage) {
					t.Fatalf("ProfileTarget() = %v, want %s containing %q", err, tc.wantReason, tc.wantMessage)
				}
				return
			}
			if err != nil {
				t.Fatalf("ProfileTarget() = %v", err)
			}
			if got.Config.Host != "https://gpu-1:6443" || string(got.Config.CAData) != "ca" || got.Config.ExecProvider != nil {
				t.Errorf("config: host %q, CA %q, exec provider %v; want the provider's server and CA and no exec provider", got.Config.Host, got.Config.CAData, got.Config.ExecProvider)
			}
			if diff := cmp.Diff(tc.want, got.Plugin, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plugin (-want +got):\n%s", diff)
			}
			again, _ := tc.plugins.ProfileTarget(tc.profile.DeepCopy())
			if again.Key != got.Key {
				t.Errorf("the same profile gave another key")
			}
		})
	}
}
