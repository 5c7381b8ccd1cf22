package workercluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
)

func TestCredentialCondition(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	lead := 24 * time.Hour
	cases := map[string]struct {
		state       *cluster.CredentialState
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantRecheck time.Duration
	}{
		"nothing held yet": {
			wantStatus: metav1.ConditionUnknown, wantReason: courier.ReasonNoCredential,
			wantMessage: "the Active condition says why",
		},
		"an opaque token": {
			state:      &cluster.CredentialState{},
			wantStatus: metav1.ConditionTrue, wantReason: courier.ReasonNoExpiry,
		},
		"an embedded token far from expiry": {
			state:      &cluster.CredentialState{ExpiresAt: now.Add(30 * 24 * time.Hour)},
			wantStatus: metav1.ConditionTrue, wantReason: courier.ReasonExpiresLater,
			wantMessage: "expires at 2030-01-31T12:00:00Z, more than workerCredentials.expiryWarning (24h0m0s) away",
			wantRecheck: 29*24*time.Hour + time.Second,
		},
		"an embedded token within the warning": {
			state:      &cluster.CredentialState{ExpiresAt: now.Add(5 * time.Hour)},
			wantStatus: metav1.ConditionFalse, wantReason: courier.ReasonCredentialExpiring,
			wantMessage: `expires at 2030-01-01T17:00:00Z (in 5h0m0s), and nothing renews it. Put a kubeconfig with a new token or certificate in Secret courier-system/w, key "kubeconfig"`,
			wantRecheck: 5*time.Hour + time.Second,
		},
		"an embedded token expired": {
			state:      &cluster.CredentialState{ExpiresAt: now.Add(-time.Minute)},
			wantStatus: metav1.ConditionFalse, wantReason: courier.ReasonCredentialExpired,
			wantMessage: "The kubeconfig's credential expired at 2030-01-01T11:59:00Z",
		},
		"a plugin renewing": {
			state:      &cluster.CredentialState{Plugin: "google", ExpiresAt: now.Add(time.Hour), RenewedAt: now},
			wantStatus: metav1.ConditionTrue, wantReason: courier.ReasonRenewing,
			wantMessage: `The plugin "google" renewed the credential at 2030-01-01T12:00:00Z; it expires at 2030-01-01T13:00:00Z`,
			wantRecheck: time.Hour + time.Second,
		},
		"a plugin whose renewal failed, its token near expiry": {
			state:      &cluster.CredentialState{Plugin: "google", ExpiresAt: now.Add(10 * time.Minute), RenewedAt: now.Add(-50 * time.Minute), RenewErr: "The credential plugin \"google\" failed with exit code 1."},
			wantStatus: metav1.ConditionFalse, wantReason: courier.ReasonCredentialExpiring,
			wantMessage: `The plugin "google" failed to renew the credential, which expires at 2030-01-01T12:10:00Z (in 10m0s); then the worker is not used. The credential plugin "google" failed with exit code 1.`,
			wantRecheck: 10*time.Minute + time.Second,
		},
		"a plugin whose renewal failed, its token far from expiry": {
			state:      &cluster.CredentialState{Plugin: "ocm", ExpiresAt: now.Add(30 * 24 * time.Hour), RenewedAt: now.Add(-time.Hour), RenewErr: "timeout"},
			wantStatus: metav1.ConditionTrue, wantReason: courier.ReasonRenewing,
			wantMessage: "its last renewal failed, and Courier tries again: timeout",
			wantRecheck: 29*24*time.Hour + time.Second,
		},
		"a plugin's credential expired": {
			state:      &cluster.CredentialState{Plugin: "google", ExpiresAt: now.Add(-time.Second), RenewedAt: now.Add(-time.Hour), RenewErr: "no answer"},
			wantStatus: metav1.ConditionFalse, wantReason: courier.ReasonCredentialExpired,
			wantMessage: `The credential the plugin "google" handed out expired at 2030-01-01T11:59:59Z, and the plugin gave no new one: no answer`,
		},
		"a plugin that never answered": {
			state:      &cluster.CredentialState{Plugin: "google", RenewErr: "garbage"},
			wantStatus: metav1.ConditionUnknown, wantReason: courier.ReasonNoCredential,
			wantMessage: `The plugin "google" has handed out no credential yet: garbage`,
		},
		"a plugin without expiry": {
			state:      &cluster.CredentialState{Plugin: "google", RenewedAt: now},
			wantStatus: metav1.ConditionTrue, wantReason: courier.ReasonNoExpiry,
			wantMessage: "without an expiry",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := credentialCondition(tc.state, `Secret courier-system/w, key "kubeconfig"`, lead, 2, now)
			if diff := cmp.Diff([]any{tc.wantStatus, tc.wantReason, int64(2)}, []any{got.Status, got.Reason, got.ObservedGeneration}); diff != "" {
				t.Errorf("condition (-want +got):\n%s\n%s", diff, got.Message)
			}
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", got.Message, tc.wantMessage)
			}
			if got := credentialRecheck(tc.state, lead, now); got != tc.wantRecheck {
				t.Errorf("recheck in %s, want %s", got, tc.wantRecheck)
			}
		})
	}
}

func TestCredentialStatus(t *testing.T) {
	exp := time.Date(2030, 1, 1, 13, 0, 0, 0, time.UTC)
	old := &courier.CredentialStatus{Plugin: "google", ExpiresAt: &metav1.Time{Time: exp}}
	cases := map[string]struct {
		state *cluster.CredentialState
		want  *courier.CredentialStatus
	}{
		"nothing looked at keeps the last": {want: old},
		"an opaque token says nothing":     {state: &cluster.CredentialState{}},
		"an embedded expiry": {
			state: &cluster.CredentialState{ExpiresAt: exp},
			want:  &courier.CredentialStatus{ExpiresAt: &metav1.Time{Time: exp}},
		},
		"a plugin's credential": {
			state: &cluster.CredentialState{Plugin: "google", ExpiresAt: exp, RenewedAt: exp.Add(-time.Hour)},
			want:  &courier.CredentialStatus{Plugin: "google", ExpiresAt: &metav1.Time{Time: exp}, RenewedAt: &metav1.Time{Time: exp.Add(-time.Hour)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, credentialStatus(old, tc.state)); diff != "" {
				t.Errorf("status.credential (-want +got):\n%s", diff)
			}
		})
	}
}
