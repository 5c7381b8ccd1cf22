package localcluster

import "testing"

func TestConfigFile(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"named": {
			args: []string{"bin/kueue", "--config", "/d/kueue.yaml", "--kubeconfig", "k"},
			want: "/d/kueue.yaml",
		},
		"named twice, the last wins as with the flag package": {
			args: []string{"bin/kueue", "--config", "/d/a.yaml", "--config", "/d/b.yaml"},
			want: "/d/b.yaml",
		},
		"flag without a value": {
			args: []string{"bin/kueue", "--config"},
		},
		"none": {
			args: []string{"bin/etcd", "--data-dir", "/d"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &Process{Name: "x", Args: tc.args}
			if got := p.ConfigFile(); got != tc.want {
				t.Errorf("ConfigFile() = %q, want %q", got, tc.want)
			}
		})
	}
}
