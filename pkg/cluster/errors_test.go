package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

func TestClassify(t *testing.T) {
	get := func(err error) error { return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/version", Err: err} }
	cases := map[string]struct {
		err         error
		wantReason  string
		wantMessage string
	}{
		"refused credentials": {
			err:         apierrors.NewUnauthorized("bad token"),
			wantReason:  courier.ReasonForbidden,
			wantMessage: "rejected the kubeconfig's credentials",
		},
		"missing RBAC": {
			err:         apierrors.NewForbidden(schema.GroupResource{Resource: "workloads"}, "", errors.New("no")),
			wantReason:  courier.ReasonForbidden,
			wantMessage: "RBAC permissions",
		},
		// What a worker answered a revoked token with, in the soak's
		// secret-rotate fault: the reason must not read "unknown".
		"refusal without a reason": {
			err:         apierrors.NewGenericServerResponse(403, "GET", schema.GroupResource{}, "", "unknown", 0, true),
			wantReason:  courier.ReasonForbidden,
			wantMessage: "giving no reason. If the kubeconfig's token was revoked or has expired, put a new one",
		},
		"time-out": {
			err:         context.DeadlineExceeded,
			wantReason:  courier.ReasonUnreachable,
			wantMessage: "did not answer in time",
		},
		"refused connection": {
			err:         get(errors.New("connection refused")),
			wantReason:  courier.ReasonUnreachable,
			wantMessage: "could not be reached",
		},
		// A CA that did not sign the worker's certificate is the
		// kubeconfig's fault, not the network's: retried slowly, for a person.
		"serving certificate signed by another CA": {
			err:         get(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}),
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "certificate-authority-data",
		},
		"serving certificate for another host": {
			err:         get(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.1"}),
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "does not verify against the kubeconfig's CA",
		},
		"expired serving certificate": {
			err:         get(x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired}),
			wantReason:  courier.ReasonInvalidKubeconfig,
			wantMessage: "does not verify against the kubeconfig's CA",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := classify(tc.err, "connecting")
			if diff := cmp.Diff(tc.wantReason, got.Reason); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", got.Message, tc.wantMessage)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("classify() does not wrap %v", tc.err)
			}
		})
	}
}
