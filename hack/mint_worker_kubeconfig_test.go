// Package hack holds the tests of the scripts in hack/.
package hack

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/courierdev/courier/pkg/cluster"
)

// fakeKubectl answers the calls the script makes, from the FAKE_*
// variables, and records each call's arguments, one line each, so that the
// test sees what the script asked the worker for.
const fakeKubectl = `#!/bin/sh
echo "$*" >> "$FAKE_KUBECTL_LOG"
case "$*" in
  *certificate-authority-data*) printf '%s' "$FAKE_CA" ;;
  *cluster.server*) printf '%s' "$FAKE_SERVER" ;;
  *" create token "*) printf '%s\n' "$FAKE_TOKEN" ;;
  *" apply -f -"*) cat > "$FAKE_KUBECTL_LOG.applied" ;;
  *" get secret "*) printf '%s' "$FAKE_TOKEN" | base64 | tr -d '\n' ;;
  *) echo "fake kubectl: unexpected call: $*" >&2; exit 1 ;;
esac
`

const (
	fakeServer = "https://worker-1.example:6443"
	fakeToken  = "eyJhbGciOiJSUzI1NiJ9.fake.token"
)

var fakeCA = []byte("-----BEGIN CERTIFICATE-----\nZmFrZSBDQQ==\n-----END CERTIFICATE-----\n")

type minted struct {
	SecretName, SecretNamespace string
	Server, Token               string
	CA                          []byte
}

func TestMintWorkerKubeconfig(t *testing.T) {
	cases := map[string]struct {
		args      []string
		want      minted
		wantCalls []string
		// wantApplied is a line of the token Secret the script applies.
		wantApplied string
	}{
		"bound token with the defaults": {
			args: []string{"--context", "worker-1"},
			want: minted{SecretName: "worker-1-kubeconfig", SecretNamespace: "courier-system", Server: fakeServer, Token: fakeToken, CA: fakeCA},
			wantCalls: []string{
				"--context worker-1 config view --minify --raw -o jsonpath={.clusters[0].cluster.certificate-authority-data}",
				"--context worker-1 config view --minify -o jsonpath={.clusters[0].cluster.server}",
				"--context worker-1 -n courier-system create token courier --duration 8760h",
			},
		},
		"bound token for another ServiceAccount, lifetime and names": {
			args: []string{"--context", "kind-w1", "--namespace", "batch-system", "--service-account", "dispatcher",
				"--duration", "720h", "--name", "eu-1", "--manager-namespace", "courier", "--server", "https://10.0.0.5:6443"},
			want: minted{SecretName: "eu-1-kubeconfig", SecretNamespace: "courier", Server: "https://10.0.0.5:6443", Token: fakeToken, CA: fakeCA},
			wantCalls: []string{
				"--context kind-w1 config view --minify --raw -o jsonpath={.clusters[0].cluster.certificate-authority-data}",
				"--context kind-w1 -n batch-system create token dispatcher --duration 720h",
			},
		},
		"long-lived token Secret": {
			args: []string{"--context", "worker-2", "--long-lived", "--secret-name", "w2"},
			want: minted{SecretName: "w2", SecretNamespace: "courier-system", Server: fakeServer, Token: fakeToken, CA: fakeCA},
			wantCalls: []string{
				"--context worker-2 config view --minify --raw -o jsonpath={.clusters[0].cluster.certificate-authority-data}",
				"--context worker-2 config view --minify -o jsonpath={.clusters[0].cluster.server}",
				"--context worker-2 apply -f -",
				"--context worker-2 -n courier-system get secret courier-token -o jsonpath={.data.token}",
			},
			wantApplied: "kubernetes.io/service-account.name: courier",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run, err := runMint(t, tc.args, string(base64Std(fakeCA)))
			if err != nil {
				t.Fatalf("running the script: %v\n%s", err, run.stderr)
			}
			secret := &corev1.Secret{}
			if err := yaml.UnmarshalStrict(run.stdout, secret); err != nil {
				t.Fatalf("decoding the emitted Secret: %v\n%s", err, run.stdout)
			}
			if secret.Kind != "Secret" || secret.APIVersion != "v1" {
				t.Errorf("emitted %s %s, want a v1 Secret", secret.APIVersion, secret.Kind)
			}
			// ParseKubeconfig is what Courier runs on the Secret: the
			// kubeconfig must pass its security checks too.
			target, err := cluster.ParseKubeconfig(secret.Data["kubeconfig"], nil)
			if err != nil {
				t.Fatalf("Courier refuses the kubeconfig: %v\n%s", err, secret.Data["kubeconfig"])
			}
			restConfig := target.Config
			got := minted{
				SecretName: secret.Name, SecretNamespace: secret.Namespace,
				Server: restConfig.Host, Token: restConfig.BearerToken, CA: restConfig.CAData,
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("minted kubeconfig Secret (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, run.calls); diff != "" {
				t.Errorf("kubectl calls (-want +got):\n%s", diff)
			}
			if !bytes.Contains(run.applied, []byte(tc.wantApplied)) {
				t.Errorf("applied token Secret lacks %q:\n%s", tc.wantApplied, run.applied)
			}
		})
	}
}

func TestMintWorkerKubeconfigRefuses(t *testing.T) {
	cases := map[string]struct {
		args       []string
		ca         string
		wantStderr string
	}{
		"no context": {
			args:       nil,
			ca:         string(base64Std(fakeCA)),
			wantStderr: "--context is required",
		},
		"unknown flag": {
			args:       []string{"--context", "w", "--ttl", "1h"},
			ca:         string(base64Std(fakeCA)),
			wantStderr: "unknown argument --ttl",
		},
		"flag without value": {
			args:       []string{"--context", "w", "--duration"},
			ca:         string(base64Std(fakeCA)),
			wantStderr: "--duration needs a value",
		},
		"CA in a file": {
			args:       []string{"--context", "w"},
			ca:         "",
			wantStderr: "has no certificate-authority-data",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run, err := runMint(t, tc.args, tc.ca)
			if err == nil {
				t.Fatalf("the script succeeded, want a refusal; it printed:\n%s", run.stdout)
			}
			if !bytes.Contains(run.stderr, []byte(tc.wantStderr)) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, run.stderr)
			}
			if len(run.stdout) != 0 {
				t.Errorf("the script printed a manifest despite failing:\n%s", run.stdout)
			}
		})
	}
}

// mintRun is what one run of the script left: its output, the fake
// kubectl's calls, and what it was given to apply.
type mintRun struct {
	stdout, stderr, applied []byte
	calls                   []string
}

// runMint runs the script with the fake kubectl first on PATH.
func runMint(t *testing.T, args []string, ca string) (mintRun, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
		t.Fatalf("writing the fake kubectl: %v", err)
	}
	logPath := filepath.Join(dir, "kubectl.log")
	cmd := exec.Command("bash", append([]string{"mint-worker-kubeconfig.sh"}, args...)...)
	cmd.Env = append(os.Environ(),
		"PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_KUBECTL_LOG="+logPath, "FAKE_CA="+ca, "FAKE_SERVER="+fakeServer, "FAKE_TOKEN="+fakeToken)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	log, _ := os.ReadFile(logPath)
	applied, _ := os.ReadFile(logPath + ".applied")
	run := mintRun{stdout: out.Bytes(), stderr: errOut.Bytes(), applied: applied}
	if trimmed := strings.TrimSpace(string(log)); trimmed != "" {
		run.calls = strings.Split(trimmed, "\n")
	}
	return run, err
}

func base64Std(b []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(b))
}
