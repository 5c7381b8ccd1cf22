package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKueuePorts(t *testing.T) {
	cases := map[string]struct {
		config  string
		want    ports
		wantErr bool
	}{
		"the ports the peer config sets": {
			config: "webhook: {host: 127.0.0.1, port: 4321, certDir: /x}\nhealth: {healthProbeBindAddress: \"127.0.0.1:8765\"}\n",
			want:   ports{webhook: 4321, health: 8765},
		},
		"no health address": {
			config:  "webhook: {port: 1}\n",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := kueuePorts([]string{"bin/kueue", "--config", path, "--kubeconfig", "k"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ports{})); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}
