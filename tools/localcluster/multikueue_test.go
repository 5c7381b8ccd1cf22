package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The ports a Kueue's or a Courier's command line serves on, from the
// configuration file it names.
func TestConfigPorts(t *testing.T) {
	cases := map[string]struct {
		portsOf func([]string) (ports, error)
		config  string
		want    ports
		wantErr bool
	}{
		"the ports the peer config sets": {
			portsOf: kueuePorts,
			config:  "webhook: {host: 127.0.0.1, port: 4321, certDir: /x}\nhealth: {healthProbeBindAddress: \"127.0.0.1:8765\"}\n",
			want:    ports{webhook: 4321, health: 8765},
		},
		"no health address": {
			portsOf: kueuePorts,
			config:  "webhook: {port: 1}\n",
			wantErr: true,
		},
		"the ports Courier's config sets": {
			portsOf: courierPorts,
			config:  "kind: Configuration\nhealth: {bindAddress: \"127.0.0.1:34285\"}\nwebhook: {enable: true, port: 36757}\n",
			want:    ports{webhook: 36757, health: 34285},
		},
		"Kueue's health key in Courier's config": {
			portsOf: courierPorts,
			config:  "health: {healthProbeBindAddress: \"127.0.0.1:1\"}\nwebhook: {port: 2}\n",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := tc.portsOf([]string{"bin/x", "--config", path, "--kubeconfig", "k"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ports{})); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}
