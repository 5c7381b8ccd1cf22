package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/courierdev/courier/pkg/version"
)

// The version command needs no cluster: it runs without a kubeconfig.
func TestVersionCommand(t *testing.T) {
	cases := map[string]struct {
		args  []string
		check func(t *testing.T, out string)
	}{
		"one line by default": {
			args: []string{"version"},
			check: func(t *testing.T, out string) {
				if want := "kubectl-courier " + version.Get().String() + "\n"; out != want {
					t.Errorf("output = %q, want %q", out, want)
				}
			},
		},
		"JSON for scripts": {
			args: []string{"version", "-o", "json"},
			check: func(t *testing.T, out string) {
				var got VersionReport
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("output is not JSON: %v\n%s", err, out)
				}
				want := VersionReport{TypeMeta: metav1.TypeMeta{APIVersion: "kubectl.courier.dev/v1alpha1", Kind: "VersionReport"}, Client: version.Get()}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("version (-want +got):\n%s", diff)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			cmd.SetArgs(append(tc.args, "--kubeconfig", "/nonexistent"))
			if err := cmd.Execute(); err != nil {
				t.Fatalf("kubectl courier %v: %v\n%s", tc.args, err, errOut.String())
			}
			tc.check(t, out.String())
		})
	}
}
