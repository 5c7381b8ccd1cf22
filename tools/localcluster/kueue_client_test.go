package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The manager Kueue's Configuration at a client QPS is the file Up wrote,
// as it is when asked, with clientConnection added; at 0 it is that file.
func TestManagerKueueConfig(t *testing.T) {
	const base = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\npprofBindAddress: \"127.0.0.1:6061\"\n"
	cases := map[string]struct {
		qps      int32
		wantFile string
		want     string
	}{
		"Kueue's default": {
			wantFile: "config.yaml",
			want:     base,
		},
		"1,000 QPS": {
			qps:      1000,
			wantFile: "config-client-qps1000.yaml",
			want:     base + "clientConnection: {qps: 1000, burst: 1000}\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := &Env{Options: Options{Dir: t.TempDir()}, Manager: "manager"}
			dir := filepath.Join(env.Dir, "manager", "kueue")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(base), 0o600); err != nil {
				t.Fatal(err)
			}
			path, err := env.ManagerKueueConfig(tc.qps)
			if err != nil {
				t.Fatalf("ManagerKueueConfig: %v", err)
			}
			if got, want := path, filepath.Join(dir, tc.wantFile); got != want {
				t.Errorf("path = %q, want %q", got, want)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(data)); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
		})
	}
}

// Without the file Up wrote there is no Configuration to derive one from.
func TestManagerKueueConfigWithoutBase(t *testing.T) {
	env := &Env{Options: Options{Dir: t.TempDir()}, Manager: "manager"}
	if _, err := env.ManagerKueueConfig(1000); err == nil {
		t.Error("ManagerKueueConfig(1000) without a base Configuration: no error")
	}
}
