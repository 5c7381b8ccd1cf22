package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
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
	data, err := os.ReadFile(set.file)
	if err != nil {
		return fmt.Errorf("reading webhook manifests: %w", err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", set.file, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("decoding %s: %w", set.file, err)
		}
		var obj client.Object
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, m); err != nil {
				return fmt.Errorf("decoding %s: %w", set.file, err)
			}
			m.Webhooks = localWebhooks(m.Webhooks, set.names, port, caBundle, func(w *admissionv1.MutatingWebhook) (string, *admissionv1.WebhookClientConfig) {
				return w.Name, &w.ClientConfig
			})
			m.Name = set.prefix + "-mutating"
			obj = m
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, v); err != nil {
				return fmt.Errorf("decoding %s: %w", set.file, err)
			}
			v.Webhooks = localWebhooks(v.Webhooks, set.names, port, caBundle, func(w *admissionv1.ValidatingWebhook) (string, *admissionv1.WebhookClientConfig) {
				return w.Name, &w.ClientConfig
			})
			v.Name = set.prefix + "-validating"
			obj = v
		default:
			continue
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", meta.Kind, obj.GetName(), err)
		}
	}
}

// localWebhooks keeps the named webhooks and points each at the local
// process.
func localWebhooks[W any](hooks []W, names []string, port int, caBundle []byte, fields func(*W) (string, *admissionv1.WebhookClientConfig)) []W {
	var kept []W
	for i := range hooks {
		name, cc := fields(&hooks[i])
		if slices.Contains(names, name) {
			*cc = localClientConfig(*cc, port, caBundle)
			kept = append(kept, hooks[i])
		}
	}
	return kept
}

func localClientConfig(cc admissionv1.WebhookClientConfig, port int, caBundle []byte) admissionv1.WebhookClientConfig {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
	return admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
}
