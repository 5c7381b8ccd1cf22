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

// Courier's own counts of the watch events its informers read
// (pkg/metrics), from the manager and from each worker.
const (
	managerWatchEventsMetric = "courier_manager_watch_events_total"
	managerWatchBytesMetric  = "courier_manager_watch_event_bytes_total"
	remoteWatchEventsMetric  = "courier_remote_watch_events_total"
	remoteWatchBytesMetric   = "courier_remote_watch_event_bytes_total"
)

// The sides of Courier's watch counts.
const (
	watchFromManager = "manager"
	watchFromWorkers = "workers"
)

// courierCounts are the counters a phase reads from Courier's metrics
// before and after it.
type courierCounts struct {
	// Passes are the dispatch controller's passes, whatever their result.
	Passes float64
	// Watch are the watch events Courier read, by side and kind
	// ("manager Workload.kueue.x-k8s.io", "workers TrainJob.trainer.kubeflow.org"),
	// the workers' summed over the workers.
	Watch watchTotals
}

// scrapeCourier reads Courier's pass and watch counters.
func scrapeCourier(ctx context.Context, url string) (courierCounts, error) {
	families, err := promtext.Scrape(ctx, url)
	if err != nil {
		return courierCounts{}, err
	}
	return parseCourier(families), nil
}

func parseCourier(families promtext.Families) courierCounts {
	watch := watchTotals{}
	add := func(side, metric string, value func(t *watchTotal) *float64) {
		for _, m := range families.Series(metric, nil) {
			key := side + " " + promtext.Labels(m)["kind"]
			t := watch[key]
			*value(&t) += m.GetCounter().GetValue()
			watch[key] = t
		}
	}
	events := func(t *watchTotal) *float64 { return &t.Events }
	bytes := func(t *watchTotal) *float64 { return &t.Bytes }
	add(watchFromManager, managerWatchEventsMetric, events)
	add(watchFromManager, managerWatchBytesMetric, bytes)
	add(watchFromWorkers, remoteWatchEventsMetric, events)
	add(watchFromWorkers, remoteWatchBytesMetric, bytes)
	return courierCounts{Passes: dispatchPasses(families), Watch: watch}
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
