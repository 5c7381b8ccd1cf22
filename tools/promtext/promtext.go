// Package promtext reads Prometheus text expositions, such as Courier's
// /metrics, for the benchmarks: one parser for every harness.
package promtext

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

// Families are the metric families of one exposition, by name.
type Families map[string]*dto.MetricFamily

// scrapeTimeout bounds one read of an endpoint.
const scrapeTimeout = 10 * time.Second

// Scrape reads and parses the exposition at url.
func Scrape(ctx context.Context, url string) (Families, error) {
	return ScrapeWith(ctx, http.DefaultClient, url)
}

// ScrapeWith reads and parses the exposition at url through hc: an API
// server's /metrics needs the client's credentials.
func ScrapeWith(ctx context.Context, hc *http.Client, url string) (Families, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scraping %s: %s: %s", url, resp.Status, body)
	}
	f, err := Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	return f, nil
}

// Parse parses a text exposition.
func Parse(r io.Reader) (Families, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	f, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return f, nil
}

// Series are the series of the family name whose labels include every
// label of match.
func (f Families) Series(name string, match map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f[name].GetMetric() {
		if matches(m, match) {
			out = append(out, m)
		}
	}
	return out
}

// Labels are a series' labels, by name.
func Labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func matches(m *dto.Metric, match map[string]string) bool {
	if len(match) == 0 {
		return true
	}
	l := Labels(m)
	for k, v := range match {
		if l[k] != v {
			return false
		}
	}
	return true
}
