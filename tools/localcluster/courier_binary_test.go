package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fields an older Courier names in its last words, when its code
// predates them; any other ending is not a refusal.
func TestRefusedConfigFields(t *testing.T) {
	cases := map[string]struct {
		log  string
		want []string
	}{
		"a strict decoding error, last": {
			log: "{\"msg\":\"Starting\"}\n" +
				"courier: decoding configuration /x/config.yaml: strict decoding error: unknown field \"lostWorkerPolicy\", unknown field \"metrics.secureServing\"\n",
			want: []string{"lostWorkerPolicy", "metrics.secureServing"},
		},
		"a strict decoding error of an earlier start": {
			log: "courier: decoding configuration /x/config.yaml: strict decoding error: unknown field \"a\"\n" +
				"{\"msg\":\"Wait completed, proceeding to shutdown the manager\"}\n",
		},
		"another error": {
			log: "courier: creating the manager: no route to host\n",
		},
		"an empty log": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "courier.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := refusedConfigFields(path)
			if err != nil {
				t.Fatalf("refusedConfigFields: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// A configuration less the fields an older Courier refuses, its other
// fields untouched; a field it cannot find is an error, not a silent keep.
func TestConfigWithout(t *testing.T) {
	const config = "kind: Configuration\nlostWorkerPolicy: Timeout\n" +
		"metrics:\n  bindAddress: 127.0.0.1:1\n  secureServing: false\n" +
		"externalFrameworks:\n- name: Job.v1.batch\n"
	cases := map[string]struct {
		fields  []string
		want    string
		wantErr bool
	}{
		"top-level and nested fields": {
			fields: []string{"lostWorkerPolicy", "metrics.secureServing"},
			want: "externalFrameworks:\n- name: Job.v1.batch\nkind: Configuration\n" +
				"metrics:\n  bindAddress: 127.0.0.1:1\n",
		},
		"no fields": {
			want: "externalFrameworks:\n- name: Job.v1.batch\nkind: Configuration\nlostWorkerPolicy: Timeout\n" +
				"metrics:\n  bindAddress: 127.0.0.1:1\n  secureServing: false\n",
		},
		"a field within a list":  {fields: []string{"externalFrameworks.name"}, wantErr: true},
		"a field that is absent": {fields: []string{"metrics.secure"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := configWithout([]byte(config), tc.fields)
			if (err != nil) != tc.wantErr {
				t.Fatalf("configWithout error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
		})
	}
}

// withBinary swaps the binary, and the configuration file where one is
// given, and keeps every other argument in its place.
func TestWithBinary(t *testing.T) {
	old := []string{"/bin/courier", "--config", "/d/config.yaml", "--kubeconfig", "/d/kubeconfig"}
	cases := map[string]struct {
		binary, config string
		want           []string
	}{
		"the binary alone": {
			binary: "/bin/baseline/courier",
			want:   []string{"/bin/baseline/courier", "--config", "/d/config.yaml", "--kubeconfig", "/d/kubeconfig"},
		},
		"the binary and its configuration": {
			binary: "/bin/baseline/courier", config: "/d/config-older.yaml",
			want: []string{"/bin/baseline/courier", "--config", "/d/config-older.yaml", "--kubeconfig", "/d/kubeconfig"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withBinary(tc.binary, tc.config)(old)); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}
