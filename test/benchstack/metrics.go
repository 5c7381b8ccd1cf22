package benchstack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Courier's metrics of its requests to workers (pkg/metrics).
const (
	requestsMetric = "courier_remote_request_duration_seconds"
	errorsMetric   = "courier_remote_request_errors_total"
)

// requestCounts are Courier's requests to the workers, by worker and verb,
// and the failed ones by worker, verb and code.
type requestCounts struct {
	Requests map[string]map[string]uint64
	Errors   map[string]map[string]uint64
}

// reconcilesMetric is controller-runtime's count of each controller's
// passes; Courier's dispatch controller is "dispatch".
const reconcilesMetric = "controller_runtime_reconcile_total"

// scrape reads Courier's request counters from its metrics endpoint.
func scrape(ctx context.Context, url string) (requestCounts, error) {
	families, err := metricFamilies(ctx, url)
	if err != nil {
		return requestCounts{}, err
	}
	return countRequests(families), nil
}

// scrapePasses reads how many passes Courier's dispatch controller has
// made, whatever their result.
func scrapePasses(ctx context.Context, url string) (float64, error) {
	families, err := metricFamilies(ctx, url)
	if err != nil {
		return 0, err
	}
	return dispatchPasses(families), nil
}

func dispatchPasses(families map[string]*dto.MetricFamily) float64 {
	var n float64
	for _, m := range families[reconcilesMetric].GetMetric() {
		if labelsOf(m)["controller"] == "dispatch" {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// metricFamilies reads and parses Courier's metrics endpoint.
func metricFamilies(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scraping Courier's metrics: %s: %s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing Courier's metrics: %w", err)
	}
	return families, nil
}

// countRequests takes the request counts out of the metric families: the
// requests histogram's sample counts and the errors counter.
func countRequests(families map[string]*dto.MetricFamily) requestCounts {
	c := requestCounts{Requests: map[string]map[string]uint64{}, Errors: map[string]map[string]uint64{}}
	if f := families[requestsMetric]; f != nil {
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			add(c.Requests, l["cluster"], l["verb"], m.GetHistogram().GetSampleCount())
		}
	}
	if f := families[errorsMetric]; f != nil {
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			add(c.Errors, l["cluster"], l["verb"]+" "+l["code"], uint64(m.GetCounter().GetValue()))
		}
	}
	return c
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func add(m map[string]map[string]uint64, outer, inner string, n uint64) {
	if m[outer] == nil {
		m[outer] = map[string]uint64{}
	}
	m[outer][inner] += n
}

// since returns the counts made after before. A series that went away (a
// worker forgotten) counts nothing.
func (c requestCounts) since(before requestCounts) requestCounts {
	diff := func(after, before map[string]map[string]uint64) map[string]map[string]uint64 {
		out := map[string]map[string]uint64{}
		for outer, inner := range after {
			for k, n := range inner {
				if d := n - min(n, before[outer][k]); d > 0 {
					add(out, outer, k, d)
				}
			}
		}
		return out
	}
	return requestCounts{Requests: diff(c.Requests, before.Requests), Errors: diff(c.Errors, before.Errors)}
}

// Verbs (pkg/metrics.Verb) by what they are for: writes and gets are made
// for workloads; lists and watches are the informers', and "other" the
// health probes and discovery, made by the minute whatever the workloads.
func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func isBackground(verb string) bool {
	switch verb {
	case "list", "watch", "other":
		return true
	}
	return false
}
