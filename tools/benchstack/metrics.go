package benchstack

import (
	"context"

	"github.com/courierdev/courier/tools/promtext"
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
	families, err := promtext.Scrape(ctx, url)
	if err != nil {
		return requestCounts{}, err
	}
	return countRequests(families), nil
}

// scrapePasses reads how many passes Courier's dispatch controller has
// made, whatever their result.
func scrapePasses(ctx context.Context, url string) (float64, error) {
	families, err := promtext.Scrape(ctx, url)
	if err != nil {
		return 0, err
	}
	return dispatchPasses(families), nil
}

func dispatchPasses(families promtext.Families) float64 {
	var n float64
	for _, m := range families.Series(reconcilesMetric, map[string]string{"controller": "dispatch"}) {
		n += m.GetCounter().GetValue()
	}
	return n
}

// countRequests takes the request counts out of the metric families: the
// requests histogram's sample counts and the errors counter.
func countRequests(families promtext.Families) requestCounts {
	c := requestCounts{Requests: map[string]map[string]uint64{}, Errors: map[string]map[string]uint64{}}
	for _, m := range families.Series(requestsMetric, nil) {
		l := promtext.Labels(m)
		add(c.Requests, l["cluster"], l["verb"], m.GetHistogram().GetSampleCount())
	}
	for _, m := range families.Series(errorsMetric, nil) {
		l := promtext.Labels(m)
		add(c.Errors, l["cluster"], l["verb"]+" "+l["code"], uint64(m.GetCounter().GetValue()))
	}
	return c
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
