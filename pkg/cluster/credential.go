package cluster

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// CredentialState is what a connection knows of its worker's credential.
type CredentialState struct {
	// Plugin names the plugin that hands it out; empty for one the
	// kubeconfig embeds.
	Plugin string
	// ExpiresAt is when the credential held expires; zero when it does
	// not, as far as Courier can tell, or when none is held.
	ExpiresAt time.Time
	// RenewedAt is when the plugin last handed one out.
	RenewedAt time.Time
	// RenewErr says why the plugin's last run failed; "" when it did not.
	RenewErr string
}

const (
	// renewAfter is the part of a plugin credential's lifetime after which
	// Courier asks for a new one, leaving the rest for retries.
	renewAfter = 0.8
	// renewMargin is the least time before a credential's expiry at which
	// Courier asks for a new one, for credentials that live seconds.
	renewMargin = 5 * time.Second
)

// credentials hold the credential one connection reaches its worker with:
// one its target embeds, which Courier only watches expire, or one a
// plugin hands out, which Courier renews before it expires and after the
// worker refused it. A credential past its expiry is never used.
type credentials struct {
	worker string
	plugin *Plugin
	now    func() time.Time

	mu        sync.Mutex
	token     string
	expiresAt time.Time
	renewedAt time.Time
	renewErr  *Error
	// refused: the worker refused the token held; the next connection
	// attempt asks the plugin again.
	refused bool
	retry   wait.Backoff
	retryAt time.Time
}

func newCredentials(worker string, t Target) *credentials {
	return &credentials{worker: worker, plugin: t.Plugin, expiresAt: t.ExpiresAt, now: time.Now,
		retry: newBackoff(time.Second, 30*time.Second)}
}

// state says what is known of the credential.
func (c *credentials) state() CredentialState {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := CredentialState{ExpiresAt: c.expiresAt, RenewedAt: c.renewedAt}
	if c.plugin != nil {
		s.Plugin = c.plugin.Name
	}
	if c.renewErr != nil {
		s.RenewErr = c.renewErr.Message
	}
	return s
}

// ensure makes sure a credential is held that has not expired, running the
// plugin when none is, when it is due for renewal or was refused. It
// returns why the worker cannot be reached with what is held.
func (c *credentials) ensure(ctx context.Context) *Error {
	c.mu.Lock()
	due := c.plugin != nil && (c.token == "" || c.refused || c.expiredLocked() || c.dueLocked())
	c.mu.Unlock()
	if due {
		c.renew(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.expiredLocked():
		return c.expiredErrorLocked()
	case c.plugin != nil && (c.token == "" || c.refused) && c.renewErr != nil:
		return c.renewErr
	}
	return nil
}

// tick renews a plugin's credential that is due, and says whether the
// credential held has expired, and when to look again (0 for never).
func (c *credentials) tick(ctx context.Context) (*Error, time.Duration) {
	c.mu.Lock()
	due := c.plugin != nil && c.dueLocked()
	c.mu.Unlock()
	if due {
		c.renew(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expiredLocked() {
		return c.expiredErrorLocked(), 0
	}
	return nil, c.nextLocked()
}

// next is how long until the credential needs looking at: a renewal, a
// retry, or its expiry; 0 for never.
func (c *credentials) next() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextLocked()
}

// wasRefused records that the worker refused the credential, so that the
// next attempt asks the plugin for a new one, as kubectl does.
func (c *credentials) wasRefused() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plugin != nil {
		c.refused = true
	}
}

// renew runs the plugin; the outcome is kept, not returned.
func (c *credentials) renew(ctx context.Context) {
	cred, err := c.plugin.run(ctx, c.worker)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if err != nil {
		c.renewErr = err.(*Error)
		c.retryAt = now.Add(c.retry.Step())
		return
	}
	c.token, c.expiresAt, c.renewedAt = cred.token, cred.expiresAt, now
	c.renewErr, c.refused, c.retryAt = nil, false, time.Time{}
	c.retry = newBackoff(time.Second, 30*time.Second)
}

// dueLocked: a plugin credential is renewed once most of its lifetime
// has passed, and after a failed renewal, once the retry is due.
func (c *credentials) dueLocked() bool {
	now := c.now()
	if c.renewErr != nil {
		return !now.Before(c.retryAt)
	}
	at := c.renewAtLocked()
	return !at.IsZero() && !now.Before(at)
}

func (c *credentials) renewAtLocked() time.Time {
	if c.expiresAt.IsZero() || c.renewedAt.IsZero() {
		return time.Time{}
	}
	at := c.renewedAt.Add(time.Duration(float64(c.expiresAt.Sub(c.renewedAt)) * renewAfter))
	if latest := c.expiresAt.Add(-renewMargin); latest.Before(at) {
		at = latest
	}
	return at
}

// nextLocked is how long until something is due: a renewal, a retry, or
// the expiry.
func (c *credentials) nextLocked() time.Duration {
	var at time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	earliest(c.expiresAt)
	if c.plugin != nil {
		if c.renewErr != nil {
			earliest(c.retryAt)
		} else {
			earliest(c.renewAtLocked())
		}
	}
	if at.IsZero() {
		return 0
	}
	return max(at.Sub(c.now()), 10*time.Millisecond)
}

func (c *credentials) expiredLocked() bool {
	return !c.expiresAt.IsZero() && !c.now().Before(c.expiresAt)
}

func (c *credentials) expiredErrorLocked() *Error {
	at := c.expiresAt.UTC().Format(time.RFC3339)
	if c.plugin == nil {
		return configError(courier.ReasonCredentialExpired,
			"The kubeconfig's credential expired at %s. Put a kubeconfig with a new token or certificate in its Secret; Courier uses it at once.", at)
	}
	why := "Courier will ask it again"
	if c.renewErr != nil {
		why = c.renewErr.Message
	}
	return configError(courier.ReasonCredentialExpired,
		"The credential the plugin %q handed out expired at %s, and the plugin gave no new one: %s", c.plugin.Name, at, why)
}

// currentToken is the plugin's token to send, "" when none is held.
func (c *credentials) currentToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// wrap adds the plugin's current token to every request to the worker.
func (c *credentials) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		token := c.currentToken()
		if token == "" {
			return rt.RoundTrip(req)
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+token)
		return rt.RoundTrip(req)
	})
}
