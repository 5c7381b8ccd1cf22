package localcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Courier's kubeconfig for a worker behind the soak's proxy keeps the API
// server's CA and credentials: only the address changes.
func TestWithServer(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["w"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "token"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithServer(data, "127.0.0.1:40001")
	if err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.DeepCopy()
	want.Clusters["w"].Server = "https://127.0.0.1:40001"
	if diff := cmp.Diff(want.Clusters["w"].Server, got.Clusters["w"].Server); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ca", "token"}, []string{string(got.Clusters["w"].CertificateAuthorityData), got.AuthInfos["u"].Token}); diff != "" {
		t.Errorf("CA and token (-want +got):\n%s", diff)
	}
}
