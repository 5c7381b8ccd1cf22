package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/pkg/apis/clientauthentication"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPluginRun(t *testing.T) {
	const v1 = "client.authentication.k8s.io/v1"
	cases := map[string]struct {
		body        string
		apiVersion  string
		cluster     *clientauthentication.Cluster
		env         []string
		want        credential
		wantMessage string
	}{
		"a token with an expiry": {
			body: `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t0k3n","expirationTimestamp":"2031-05-01T12:00:00Z"}}'`,
			want: credential{token: "t0k3n", expiresAt: time.Date(2031, 5, 1, 12, 0, 0, 0, time.UTC)},
		},
		"a token without expiry, of v1beta1": {
			body:       `echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t0k3n"}}'`,
			apiVersion: "client.authentication.k8s.io/v1beta1",
			want:       credential{token: "t0k3n"},
		},
		"a bound ServiceAccount token without expirationTimestamp expires at its exp": {
			body: `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + jwt(`{"exp":1924992000}`) + `"}}'`,
			want: credential{token: jwt(`{"exp":1924992000}`), expiresAt: time.Unix(1924992000, 0)},
		},
		"expirationTimestamp wins over the token's exp": {
			body: `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + jwt(`{"exp":1924992000}`) + `","expirationTimestamp":"2031-05-01T12:00:00Z"}}'`,
			want: credential{token: jwt(`{"exp":1924992000}`), expiresAt: time.Date(2031, 5, 1, 12, 0, 0, 0, time.UTC)},
		},
		// The plugin is told the cluster, and gets the Configuration's
		// environment on top of Courier's.
		"told the cluster and its environment": {
			body: `case "$KUBERNETES_EXEC_INFO" in *'"server":"https://w:6443"'*) ;; *) echo "no cluster in $KUBERNETES_EXEC_INFO" >&2; exit 3;; esac
[ "$REGION" = eu ] && [ -n "$PATH" ] || exit 4
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"'"$REGION"'"}}'`,
			cluster: &clientauthentication.Cluster{Server: "https://w:6443"},
			env:     []string{"REGION=eu"},
			want:    credential{token: "eu"},
		},
		"a failure quotes the end of standard error": {
			body:        `echo "error: the token service said no" >&2; exit 2`,
			wantMessage: `The credential plugin "test" (PATH) failed with exit code 2: error: the token service said no.`,
		},
		"garbage": {
			body:        `echo 'hello, secret world'`,
			wantMessage: `The credential plugin "test" (PATH) printed what is not an ExecCredential of client.authentication.k8s.io/v1 (not JSON).`,
		},
		"another kind": {
			body:        `echo '{"apiVersion":"v1","kind":"Secret","data":{"token":"c2VjcmV0"}}'`,
			wantMessage: "printed what is not an ExecCredential of client.authentication.k8s.io/v1",
		},
		"another version than configured": {
			body:        `echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"secret"}}'`,
			wantMessage: "printed an ExecCredential of client.authentication.k8s.io/v1beta1, not of client.authentication.k8s.io/v1 as configured",
		},
		"no status": {
			body:        `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}'`,
			wantMessage: "printed an ExecCredential without status",
		},
		"no token": {
			body:        `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'`,
			wantMessage: "printed an ExecCredential without a token",
		},
		"a client certificate": {
			body:        `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"c","clientKeyData":"k"}}'`,
			wantMessage: "printed a client certificate, not a token",
		},
		"endless output": {
			body:        `yes secret | head -c 2000000`,
			wantMessage: "printed more than 1048576 bytes",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := script(t, tc.body)
			p := &Plugin{Name: "test", Command: path, APIVersion: v1, Cluster: tc.cluster, Env: tc.env, Timeout: 10 * time.Second}
			if tc.apiVersion != "" {
				p.APIVersion = tc.apiVersion
			}
			got, err := p.run(context.Background(), "w")
			if tc.wantMessage == "" {
				if err != nil {
					t.Fatalf("run() = %v", err)
				}
				if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(credential{})); diff != "" {
					t.Errorf("credential (-want +got):\n%s", diff)
				}
				return
			}
			var cerr *Error
			if !errors.As(err, &cerr) || cerr.Reason != courier.ReasonCredentialPluginFailed {
				t.Fatalf("run() = %v, want a %s error", err, courier.ReasonCredentialPluginFailed)
			}
			if want := strings.ReplaceAll(tc.wantMessage, "PATH", path); !strings.Contains(cerr.Message, want) {
				t.Errorf("message %q does not contain %q", cerr.Message, want)
			}
			if strings.Contains(cerr.Message, "secret") {
				t.Errorf("message %q quotes the plugin's output", cerr.Message)
			}
		})
	}
}

// A plugin that hangs is stopped at its timeout, with the children it
// started, and its failure says so.
func TestPluginRunHangs(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	path := script(t, "sleep 60 &\necho $! > "+pidFile+"\nwait\n")
	p := &Plugin{Name: "slow", Command: path, APIVersion: "client.authentication.k8s.io/v1", Timeout: 500 * time.Millisecond}
	start := time.Now()
	_, err := p.run(context.Background(), "w")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("run() took %s, want about the 500ms timeout", took)
	}
	var cerr *Error
	if !errors.As(err, &cerr) || !strings.Contains(cerr.Message, `The credential plugin "slow"`) ||
		!strings.Contains(cerr.Message, "did not answer within workerCredentials.pluginTimeout (500ms) and was stopped") {
		t.Fatalf("run() = %v, want a timeout naming the plugin", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	// A killed child of ours lingers as a zombie at most; /proc shows its state.
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(data)) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin's child %s still runs: %s", strings.TrimSpace(string(data)), stat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
