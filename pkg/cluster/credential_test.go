package cluster

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// fakePlugin is a plugin whose answer the test sets: a token and its
// expiry, or a failure.
type fakePlugin struct {
	t   *testing.T
	dir string
	*Plugin
}

func newFakePlugin(t *testing.T) *fakePlugin {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugin")
	body := "#!/bin/sh\n[ -f " + dir + "/fail ] && { echo refusing >&2; exit 1; }\ncat " + dir + "/out\n"
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &fakePlugin{t: t, dir: dir, Plugin: &Plugin{Name: "fake", Command: path, APIVersion: "client.authentication.k8s.io/v1", Timeout: 10 * time.Second}}
}

func (f *fakePlugin) hands(token string, expiresAt time.Time) {
	f.t.Helper()
	out := `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + token + `","expirationTimestamp":"` + expiresAt.UTC().Format(time.RFC3339) + `"}}`
	_ = os.Remove(filepath.Join(f.dir, "fail"))
	if err := os.WriteFile(filepath.Join(f.dir, "out"), []byte(out), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakePlugin) fails() {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "fail"), nil, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func TestCredentialsRenewBeforeExpiryAndReportExpiry(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	plugin := newFakePlugin(t)
	c := newCredentials("w", Target{Plugin: plugin.Plugin})
	c.now = func() time.Time { return now }

	plugin.hands("first", now.Add(100*time.Second))
	if err := c.ensure(ctx); err != nil {
		t.Fatalf("ensure() = %v", err)
	}
	if got := c.currentToken(); got != "first" {
		t.Fatalf("token %q, want first", got)
	}
	// Renewed at 80% of its lifetime.
	if got := c.next(); got != 80*time.Second {
		t.Errorf("next() = %s, want 80s", got)
	}

	now = now.Add(80 * time.Second)
	plugin.hands("second", now.Add(100*time.Second))
	if err, next := c.tick(ctx); err != nil || next != 80*time.Second {
		t.Fatalf("tick() = %v, %s; want a renewal due in 80s", err, next)
	}
	if got := c.currentToken(); got != "second" {
		t.Fatalf("token %q after renewal, want second", got)
	}

	// The plugin stops answering: the token held serves on, and its
	// failure shows, until the token expires.
	now = now.Add(80 * time.Second)
	plugin.fails()
	if err, next := c.tick(ctx); err != nil || next < time.Second || next > 1100*time.Millisecond {
		t.Fatalf("tick() = %v, %s; want a retry in a second, jittered", err, next)
	}
	s := c.state()
	if s.Plugin != "fake" || !strings.Contains(s.RenewErr, "failed with exit code 1: refusing") || c.currentToken() != "second" {
		t.Fatalf("state %+v with token %q, want the failure shown and the token kept", s, c.currentToken())
	}
	now = now.Add(20 * time.Second)
	err, _ := c.tick(ctx)
	if err == nil || err.Reason != courier.ReasonCredentialExpired ||
		!strings.Contains(err.Message, `The credential the plugin "fake" handed out expired at 2030-01-01T00:03:00Z, and the plugin gave no new one: The credential plugin "fake"`) {
		t.Fatalf("tick() at expiry = %v, want CredentialExpired naming the plugin and its failure", err)
	}
	if err := c.ensure(ctx); err == nil || err.Reason != courier.ReasonCredentialExpired {
		t.Fatalf("ensure() after expiry = %v, want CredentialExpired", err)
	}

	// The plugin answers again.
	plugin.hands("third", now.Add(100*time.Second))
	if err := c.ensure(ctx); err != nil || c.currentToken() != "third" || c.state().RenewErr != "" {
		t.Fatalf("ensure() = %v with token %q, want a new token", err, c.currentToken())
	}
}

// A token the worker refused is asked for again at the next attempt, as
// kubectl does, even before it is due.
func TestCredentialsRefusedTokenIsRenewed(t *testing.T) {
	ctx := context.Background()
	plugin := newFakePlugin(t)
	c := newCredentials("w", Target{Plugin: plugin.Plugin})
	plugin.hands("revoked", time.Now().Add(time.Hour))
	if err := c.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	plugin.hands("fresh", time.Now().Add(time.Hour))
	if err := c.ensure(ctx); err != nil || c.currentToken() != "revoked" {
		t.Fatalf("ensure() = %v with token %q, want the token held kept", err, c.currentToken())
	}
	c.wasRefused()
	if err := c.ensure(ctx); err != nil || c.currentToken() != "fresh" {
		t.Fatalf("ensure() after a refusal = %v with token %q, want a fresh one", err, c.currentToken())
	}
	// A refused token the plugin cannot replace is not sent again.
	c.wasRefused()
	plugin.fails()
	if err := c.ensure(ctx); err == nil || err.Reason != courier.ReasonCredentialPluginFailed {
		t.Fatalf("ensure() = %v, want the plugin's failure", err)
	}
}

func TestCredentialsEmbeddedExpiry(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCredentials("w", Target{ExpiresAt: now.Add(time.Hour)})
	c.now = func() time.Time { return now }
	if err := c.ensure(context.Background()); err != nil {
		t.Fatalf("ensure() = %v", err)
	}
	if got := c.next(); got != time.Hour {
		t.Errorf("next() = %s, want the hour to expiry", got)
	}
	now = now.Add(time.Hour)
	err := c.ensure(context.Background())
	if err == nil || err.Reason != courier.ReasonCredentialExpired || !strings.Contains(err.Message, "The kubeconfig's credential expired at 2030-01-01T01:00:00Z. Put a kubeconfig with a new token") {
		t.Fatalf("ensure() = %v, want CredentialExpired", err)
	}
	if got := newCredentials("w", Target{}).next(); got != 0 {
		t.Errorf("next() = %s for a credential that does not expire, want 0", got)
	}
}

func TestCredentialsWrapSendsTheCurrentToken(t *testing.T) {
	plugin := newFakePlugin(t)
	c := newCredentials("w", Target{Plugin: plugin.Plugin})
	plugin.hands("t1", time.Now().Add(time.Hour))
	if err := c.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sent string
	rt := c.wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		sent = req.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	req, _ := http.NewRequest(http.MethodGet, "https://w/version", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if sent != "Bearer t1" || req.Header.Get("Authorization") != "" {
		t.Errorf("sent %q and left %q on the caller's request, want Bearer t1 on a copy", sent, req.Header.Get("Authorization"))
	}
}
