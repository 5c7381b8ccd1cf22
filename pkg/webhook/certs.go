package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

// addCertRotator has Courier issue its own webhook certificate: a
// self-signed CA and a serving certificate for the webhook Service, kept in
// the Secret the Deployment mounts at certDir and renewed before they
// expire, with the CA injected into both webhook configurations. ready is
// closed once the certificate is mounted and the CA injected.
func addCertRotator(mgr ctrl.Manager, cfg *configv1alpha1.Configuration, ready chan struct{}) error {
	w := cfg.Webhook
	key := types.NamespacedName{Namespace: cfg.Namespace, Name: w.SecretName}
	if err := ensureSecret(mgr, key); err != nil {
		return err
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        w.CertDir,
		CAName:         "courier-ca",
		CAOrganization: "courier",
		DNSName:        fmt.Sprintf("%s.%s.svc", w.ServiceName, cfg.Namespace),
		ExtraDNSNames:  []string{fmt.Sprintf("%s.%s.svc.cluster.local", w.ServiceName, cfg.Namespace)},
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Type: rotator.Mutating, Name: w.MutatingConfigurationName},
			{Type: rotator.Validating, Name: w.ValidatingConfigurationName},
		},
		// Every replica serves webhooks, so every replica needs the files;
		// the Secret is written with optimistic locking.
		RequireLeaderElection: false,
		FieldOwner:            "courier",
	})
	if err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	return nil
}

// ensureSecret creates the certificate's Secret, empty, when the install
// did not: the rotator fills a Secret but does not create one, and stops
// the manager when it is missing.
func ensureSecret(mgr ctrl.Manager, key types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating a client for the webhook certificate Secret: %w", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the webhook certificate Secret %s: %w", key, err)
	}
	return nil
}
