package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/test/integration/framework"
)

// courierWebhooks serves Courier's webhooks from the local process: a
// certificate of the environment's own, the chart's Configuration with
// certManagement External, and the chart's webhook configurations pointed
// at the process, as cert-manager and a Service would in a cluster.
type courierWebhooks struct {
	port    int
	certDir string
	ca      []byte
}

// newCourierWebhooks writes a serving certificate for 127.0.0.1 into dir.
func newCourierWebhooks(dir string, port int) (*courierWebhooks, error) {
	caPEM, certPEM, keyPEM, err := framework.ServingCertificate()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "webhook-certs")
	if err := writeCert(certDir, certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("writing Courier's webhook certificate: %w", err)
	}
	return &courierWebhooks{port: port, certDir: certDir, ca: caPEM}, nil
}

// configure returns config with the webhook server on, on w's port, with
// w's certificate.
func (w *courierWebhooks) configure(config string) (string, error) {
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		return "", fmt.Errorf("decoding the chart's Configuration: %w", err)
	}
	webhook, _, _ := unstructured.NestedMap(doc, "webhook")
	if webhook == nil {
		webhook = map[string]any{}
	}
	webhook["enable"] = true
	webhook["port"] = int64(w.port)
	webhook["certDir"] = w.certDir
	webhook["certManagement"] = "External"
	if err := unstructured.SetNestedMap(doc, webhook, "webhook"); err != nil {
		return "", fmt.Errorf("setting the webhook section: %w", err)
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding the Configuration: %w", err)
	}
	return string(out), nil
}

// install applies the chart's webhook configurations, pointed at the local
// process, and waits until the API server gets Courier's answers.
func (w *courierWebhooks) install(ctx context.Context, c client.Client, rendered []*unstructured.Unstructured) error {
	configs, err := framework.LocalWebhooks(rendered, nil, w.port, w.ca)
	if err != nil {
		return err
	}
	for _, obj := range configs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("installing webhook configuration %s: %w", obj.GetName(), err)
		}
	}
	probe := &courier.DispatchPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe"},
		Spec:       courier.DispatchPolicySpec{Clusters: []string{"probe"}, Filter: "1"},
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, probe, client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "spec.filter"), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to call Courier's webhooks (last answer to a dry-run DispatchPolicy with a filter that is not a bool: %v): %w", last, err)
	}
	return nil
}
