package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const dashboardPath = "../../config/components/prometheus/courier-dashboard.json"

// metricName finds the metric names in a PromQL expression. The promql
// parser is not in the module graph; Courier's names are plain enough for
// a regexp, and label values in the dashboard are template variables.
var metricName = regexp.MustCompile(`\bcourier_[a-z_]+\b`)

// A metric the dashboard queries that Courier does not export is an empty
// panel nobody notices; a metric without a panel is one nobody looks at.
func TestDashboardQueriesExist(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dashboard map[string]any
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardPath, err)
	}
	checkDatasourceVariable(t, dashboard)
	var exprs []string
	collectQueries(dashboard, &exprs)
	if len(exprs) == 0 {
		t.Fatalf("%s has no queries", dashboardPath)
	}

	exported := exportedNames(t)
	queried := sets.New[string]()
	for _, expr := range exprs {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 && strings.Contains(expr, "(") {
			t.Errorf("query %q names no Courier metric", expr)
		}
		for _, name := range names {
			if !exported.Has(name) {
				t.Errorf("query %q reads %s, which Courier does not export; exported: %v", expr, name, sets.List(exported))
			}
			queried.Insert(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count"))
		}
	}
	for _, name := range registeredNames(t) {
		if !queried.Has(name) {
			t.Errorf("metric %s has no panel in %s", name, dashboardPath)
		}
	}
}

// collectQueries gathers every PromQL expression of the dashboard: the
// panels' targets and the variables' queries.
func collectQueries(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for key, val := range v {
			if s, ok := val.(string); ok && (key == "expr" || key == "query" || key == "definition") {
				*out = append(*out, s)
				continue
			}
			collectQueries(val, out)
		}
	case []any:
		for _, val := range v {
			collectQueries(val, out)
		}
	}
}

// checkDatasourceVariable requires every panel and target to use the
// dashboard's datasource variable, so that it imports into any Grafana.
func checkDatasourceVariable(t *testing.T, dashboard map[string]any) {
	t.Helper()
	var found bool
	templating, _ := dashboard["templating"].(map[string]any)
	list, _ := templating["list"].([]any)
	for _, v := range list {
		if v, ok := v.(map[string]any); ok && v["type"] == "datasource" && v["name"] == "datasource" && v["query"] == "prometheus" {
			found = true
		}
	}
	if !found {
		t.Errorf("%s has no Prometheus datasource variable named datasource", dashboardPath)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ds, ok := v["datasource"].(map[string]any); ok && ds["uid"] != "${datasource}" {
				t.Errorf("%s uses datasource %v, not the variable ${datasource}", v["title"], ds)
			}
			for _, val := range v {
				walk(val)
			}
		case []any:
			for _, val := range v {
				walk(val)
			}
		}
	}
	walk(dashboard["panels"])
}

// exportedNames gathers, from controller-runtime's registry that the
// metrics endpoint serves, the names of Courier's series once every vector
// has one, with a histogram's _bucket, _sum and _count.
func exportedNames(t *testing.T) sets.Set[string] {
	t.Helper()
	const c = "dashboard-test"
	touchAll(c)
	CountPendingWith(func() (map[string]int, error) { return map[string]int{"check": 1}, nil })
	CountExpectationsWith(func() map[string]int { return map[string]int{"written": 1} })
	t.Cleanup(func() {
		ForgetWorker(c)
		PlacementDecisions.Reset()
		CountPendingWith(nil)
		CountExpectationsWith(nil)
	})

	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	names := sets.New[string]()
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), namespace+"_") {
			continue
		}
		names.Insert(f.GetName())
		if f.GetType() == dto.MetricType_HISTOGRAM {
			names.Insert(f.GetName()+"_bucket", f.GetName()+"_sum", f.GetName()+"_count")
		}
	}
	for _, name := range registeredNames(t) {
		if !names.Has(name) {
			t.Errorf("metric %s is registered but was not touched above; give it a series", name)
		}
	}
	return names
}

// descName reads a descriptor's fully-qualified name, which Desc shows only
// in its String.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registeredNames lists Courier's metrics registered on controller-runtime's
// registry, whether or not they have series.
func registeredNames(t *testing.T) []string {
	t.Helper()
	reg, ok := metrics.Registry.(prometheus.Collector)
	if !ok {
		t.Fatal("controller-runtime's registry does not describe its collectors")
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil && strings.HasPrefix(m[1], namespace+"_") {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
