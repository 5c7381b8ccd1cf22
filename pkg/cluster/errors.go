package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Error is why a worker cannot be used. Reason is one of the WorkerCluster
// Active condition reasons; Message says what to fix.
type Error struct {
	Reason  string
	Message string
	err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.err }

// IsConfiguration reports whether a person must fix something before the
// worker can be used, as opposed to network loss, which may pass by itself.
func (e *Error) IsConfiguration() bool {
	return e.Reason != courier.ReasonUnreachable
}

func configError(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ErrNotConnected is returned for a worker without a working connection.
var ErrNotConnected = errors.New("worker cluster is not connected")

// classify turns an error from a worker's API server into an Error.
// Refused credentials are configuration errors; everything else, time-outs
// and refused connections included, counts as network loss.
func classify(err error, doing string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case apierrors.IsUnauthorized(err):
		return &Error{Reason: courier.ReasonForbidden, err: err,
			Message: fmt.Sprintf("The worker rejected the kubeconfig's credentials while %s: %v. Put valid credentials in the kubeconfig Secret.", doing, err)}
	case apierrors.IsForbidden(err) && !hasServerReason(err):
		// A revoked token's requests get this from some paths: a 403 whose
		// body client-go cannot read, which it reports as "unknown".
		return &Error{Reason: courier.ReasonForbidden, err: err,
			Message: fmt.Sprintf("The worker refused access while %s, giving no reason. If the kubeconfig's token was revoked or has expired, put a new one in the kubeconfig Secret; otherwise grant the kubeconfig's user the RBAC permissions in Courier's worker role.", doing)}
	case apierrors.IsForbidden(err):
		return &Error{Reason: courier.ReasonForbidden, err: err,
			Message: fmt.Sprintf("The worker refused access while %s: %v. Grant the kubeconfig's user the RBAC permissions in Courier's worker role.", doing, err)}
	case isCertificateError(err):
		// A wrong CA does not pass by itself: it is the kubeconfig's.
		return &Error{Reason: courier.ReasonInvalidKubeconfig, err: err,
			Message: fmt.Sprintf("The worker's serving certificate does not verify against the kubeconfig's CA while %s: %v. Put the worker API server's CA in certificate-authority-data.", doing, err)}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Reason: courier.ReasonUnreachable, err: err,
			Message: fmt.Sprintf("The worker's API server did not answer in time while %s.", doing)}
	default:
		return &Error{Reason: courier.ReasonUnreachable, err: err,
			Message: fmt.Sprintf("The worker's API server could not be reached while %s: %v.", doing, err)}
	}
}

// hasServerReason reports whether an API error carries the server's own
// message: client-go puts "unknown" in place of a body it cannot read.
func hasServerReason(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	m := status.Status().Message
	return m != "" && m != "unknown"
}

// isCertificateError tells a TLS verification failure of the worker's
// serving certificate.
func isCertificateError(err error) bool {
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid)
}
