package framework

import (
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LocalWebhooks returns the webhook configurations among objs, each
// webhook calling https://127.0.0.1:port<its Service path> and trusting
// caBundle, as a webhook server running in a local process needs: a
// process cluster has no Service network. keep names the webhooks to keep;
// nil keeps all.
func LocalWebhooks(objs []*unstructured.Unstructured, keep []string, port int, caBundle []byte) ([]client.Object, error) {
	var out []client.Object
	for _, obj := range objs {
		switch obj.GetKind() {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, m); err != nil {
				return nil, fmt.Errorf("decoding MutatingWebhookConfiguration %s: %w", obj.GetName(), err)
			}
			m.Webhooks = localWebhooks(m.Webhooks, keep, port, caBundle, func(w *admissionv1.MutatingWebhook) (string, *admissionv1.WebhookClientConfig) {
				return w.Name, &w.ClientConfig
			})
			out = append(out, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, v); err != nil {
				return nil, fmt.Errorf("decoding ValidatingWebhookConfiguration %s: %w", obj.GetName(), err)
			}
			v.Webhooks = localWebhooks(v.Webhooks, keep, port, caBundle, func(w *admissionv1.ValidatingWebhook) (string, *admissionv1.WebhookClientConfig) {
				return w.Name, &w.ClientConfig
			})
			out = append(out, v)
		}
	}
	return out, nil
}

func localWebhooks[W any](hooks []W, keep []string, port int, caBundle []byte, fields func(*W) (string, *admissionv1.WebhookClientConfig)) []W {
	var kept []W
	for i := range hooks {
		name, cc := fields(&hooks[i])
		if keep == nil || slices.Contains(keep, name) {
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
