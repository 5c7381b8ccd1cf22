package localcluster

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/test/integration/framework"
)

// webhookSet is a peer's webhook manifests, reduced to the named webhooks
// and pointed at a local process.
type webhookSet struct {
	// file is the upstream manifests file.
	file string
	// names keeps only these webhooks; entries for integrations that are not
	// enabled would answer 404 and block creates.
	names []string
	// prefix names the configurations created, one per peer and cluster.
	prefix string
}

// install creates the webhook configurations of set, each webhook calling
// https://127.0.0.1:port<its path> with caBundle.
func (set webhookSet) install(ctx context.Context, c client.Client, port int, caBundle []byte) error {
	objs, err := framework.ReadManifests(set.file)
	if err != nil {
		return fmt.Errorf("reading webhook manifests: %w", err)
	}
	configs, err := framework.LocalWebhooks(objs, set.names, port, caBundle)
	if err != nil {
		return fmt.Errorf("reading %s: %w", set.file, err)
	}
	for _, obj := range configs {
		kind, suffix := "ValidatingWebhookConfiguration", "-validating"
		if _, ok := obj.(*admissionv1.MutatingWebhookConfiguration); ok {
			kind, suffix = "MutatingWebhookConfiguration", "-mutating"
		}
		obj.SetName(set.prefix + suffix)
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", kind, obj.GetName(), err)
		}
	}
	return nil
}
