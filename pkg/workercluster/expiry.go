package workercluster

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

// credentialStatus is status.credential for what the connection knows of
// the credential; nil when there is nothing to say: no plugin, no expiry.
func credentialStatus(old *courier.CredentialStatus, s *cluster.CredentialState) *courier.CredentialStatus {
	if s == nil {
		// Nothing looked at yet: the last observation stands.
		return old.DeepCopy()
	}
	if s.Plugin == "" && s.ExpiresAt.IsZero() {
		return nil
	}
	st := &courier.CredentialStatus{Plugin: s.Plugin}
	if !s.ExpiresAt.IsZero() {
		st.ExpiresAt = &metav1.Time{Time: s.ExpiresAt}
	}
	if !s.RenewedAt.IsZero() {
		st.RenewedAt = &metav1.Time{Time: s.RenewedAt}
	}
	return st
}

// credentialCondition is the CredentialValid condition: False while the
// credential expires within lead with nothing to renew it (the kubeconfig
// embeds it, or its plugin failed to renew it), or has expired; True while
// it lasts or its plugin renews it; Unknown while Courier holds none. It
// is pure: the reconciler supplies the clock. where names what a person
// must fix: the kubeconfig Secret.
func credentialCondition(s *cluster.CredentialState, where string, lead time.Duration, generation int64, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: courier.WorkerClusterCredentialValid, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	set := func(status metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
		c.Status, c.Reason, c.Message = status, reason, fmt.Sprintf(format, args...)
		return c
	}
	if s == nil {
		return set(metav1.ConditionUnknown, courier.ReasonNoCredential, "Courier holds no credential for the worker; the Active condition says why.")
	}
	expires, left := stamp(s.ExpiresAt), s.ExpiresAt.Sub(now).Round(time.Second)
	switch {
	case s.Plugin != "" && s.RenewedAt.IsZero():
		return set(metav1.ConditionUnknown, courier.ReasonNoCredential, "The plugin %q has handed out no credential yet: %s", s.Plugin, orPending(s.RenewErr))
	case !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt) && s.Plugin != "":
		return set(metav1.ConditionFalse, courier.ReasonCredentialExpired,
			"The credential the plugin %q handed out expired at %s, and the plugin gave no new one: %s", s.Plugin, expires, orPending(s.RenewErr))
	case !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt):
		return set(metav1.ConditionFalse, courier.ReasonCredentialExpired,
			"The kubeconfig's credential expired at %s. Put a kubeconfig with a new token or certificate in %s; Courier uses it at once.", expires, where)
	case s.ExpiresAt.IsZero() && s.Plugin != "":
		return set(metav1.ConditionTrue, courier.ReasonNoExpiry,
			"The plugin %q hands out credentials without an expiry; Courier asks it for a new one when the worker refuses the one it holds.", s.Plugin)
	case s.ExpiresAt.IsZero():
		return set(metav1.ConditionTrue, courier.ReasonNoExpiry, "The kubeconfig's credential carries no expiry Courier can read.")
	case s.Plugin != "" && s.RenewErr == "":
		return set(metav1.ConditionTrue, courier.ReasonRenewing,
			"The plugin %q renewed the credential at %s; it expires at %s, and Courier renews it before then.", s.Plugin, stamp(s.RenewedAt), expires)
	case s.Plugin != "" && left > lead:
		return set(metav1.ConditionTrue, courier.ReasonRenewing,
			"The credential the plugin %q handed out expires at %s; its last renewal failed, and Courier tries again: %s", s.Plugin, expires, s.RenewErr)
	case s.Plugin != "":
		return set(metav1.ConditionFalse, courier.ReasonCredentialExpiring,
			"The plugin %q failed to renew the credential, which expires at %s (in %s); then the worker is not used. %s", s.Plugin, expires, left, s.RenewErr)
	case left > lead:
		return set(metav1.ConditionTrue, courier.ReasonExpiresLater,
			"The kubeconfig's credential expires at %s, more than workerCredentials.expiryWarning (%s) away.", expires, lead)
	default:
		return set(metav1.ConditionFalse, courier.ReasonCredentialExpiring,
			"The kubeconfig's credential expires at %s (in %s), and nothing renews it. Put a kubeconfig with a new token or certificate in %s; Courier uses it at once.", expires, left, where)
	}
}

// credentialRecheck is when the CredentialValid condition changes by the
// clock alone: when the warning starts, and at the expiry; 0 for never.
func credentialRecheck(s *cluster.CredentialState, lead time.Duration, now time.Time) time.Duration {
	if s == nil || s.ExpiresAt.IsZero() {
		return 0
	}
	for _, at := range []time.Time{s.ExpiresAt.Add(-lead), s.ExpiresAt} {
		if d := at.Sub(now); d > 0 {
			return d + time.Second
		}
	}
	return 0
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func orPending(err string) string {
	if err == "" {
		return "Courier is asking it."
	}
	return err
}
