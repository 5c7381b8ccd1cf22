package metrics

import (
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

const alertsPath = "../../config/components/prometheus/courier-alerts.yaml"

// An alert on a metric Courier does not export never fires; an alert
// without a severity or a summary pages nobody usefully.
func TestAlertsQueryExportedMetrics(t *testing.T) {
	data, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert       string            `json:"alert"`
					Expr        string            `json:"expr"`
					For         string            `json:"for"`
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		t.Fatalf("%s: %v", alertsPath, err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("%s is a %q, want a PrometheusRule", alertsPath, rule.Kind)
	}
	exported := exportedNames(t)
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			names := metricName.FindAllString(r.Expr, -1)
			if len(names) == 0 {
				t.Errorf("alert %s reads no Courier metric: %q", r.Alert, r.Expr)
			}
			for _, name := range names {
				if !exported.Has(name) {
					t.Errorf("alert %s reads %s, which Courier does not export", r.Alert, name)
				}
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("alert %s has severity %q", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a summary or a description", r.Alert)
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("alert %s has unbalanced parentheses: %q", r.Alert, r.Expr)
			}
		}
	}
	want := sets.New("CourierWorkerDisconnected", "CourierWorkerLost", "CourierDispatchLatencyHigh", "CourierWorkloadsRejected", "CourierMetricsAbsent")
	if got := sets.New(alerts...); !got.Equal(want) {
		t.Errorf("alerts %v, want %v", sets.List(got), sets.List(want))
	}
}
