package benchscale

import (
	"context"
	"fmt"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/courierdev/courier/tools/promtext"
)

// courierMetrics is what a phase reads from Courier's /metrics: its
// dispatch controller's passes, how long work waited in its queue, how
// long each pass took, and how long its writes to workers took. Set beside
// the latency, they tell Courier's part from the API servers': a pass's
// time includes its requests, the wait is Courier's alone.
type courierMetrics struct {
	reconciles   float64
	queueWait    histogram
	pass         histogram
	workerWrites histogram
}

// histogram is a Prometheus histogram as its text exposition gives it:
// cumulative counts per upper bound, ascending, +Inf last.
type histogram struct {
	bounds, counts []float64
	sum, count     float64
}

// addBucket adds a bucket's count; series of one histogram with several
// label values, which share their bounds, add up.
func (h *histogram) addBucket(le, v float64) {
	if i := slices.Index(h.bounds, le); i >= 0 {
		h.counts[i] += v
		return
	}
	h.bounds, h.counts = append(h.bounds, le), append(h.counts, v)
}

// Spread summarises a histogram over a phase. P50 and P95 are the upper
// bounds of the buckets the quantiles fall in: "at most".
type Spread struct {
	MeanSeconds float64 `json:"meanSeconds"`
	P50AtMost   float64 `json:"p50AtMostSeconds"`
	P95AtMost   float64 `json:"p95AtMostSeconds"`
}

func (s Spread) String() string {
	if s.P50AtMost == 0 && s.MeanSeconds == 0 {
		return "none"
	}
	return fmt.Sprintf("mean %s, p50 ≤ %s, p95 ≤ %s", seconds(s.MeanSeconds), seconds(s.P50AtMost), seconds(s.P95AtMost))
}

func seconds(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "+Inf"
	case s < 0.001:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}

// since is what h counted after earlier.
func (h histogram) since(earlier histogram) histogram {
	d := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), sum: h.sum - earlier.sum, count: h.count - earlier.count}
	if slices.Equal(h.bounds, earlier.bounds) {
		for i := range d.counts {
			d.counts[i] -= earlier.counts[i]
		}
	}
	return d
}

func (h histogram) spread() Spread {
	if h.count <= 0 {
		return Spread{}
	}
	at := func(q float64) float64 {
		for i, c := range h.counts {
			if c >= q*h.count {
				return h.bounds[i]
			}
		}
		return math.Inf(1)
	}
	return Spread{MeanSeconds: h.sum / h.count, P50AtMost: at(0.5), P95AtMost: at(0.95)}
}

// Series of the dispatch controller, as controller-runtime names them, and
// Courier's own of its requests to workers.
const (
	reconcileTotal = "controller_runtime_reconcile_total"
	reconcileTime  = "controller_runtime_reconcile_time_seconds"
	queueDuration  = "workqueue_queue_duration_seconds"
	remoteDuration = "courier_remote_request_duration_seconds"
)

// dispatchController selects the dispatch controller's series, and
// dispatchQueue its work queue's.
var (
	dispatchController = map[string]string{"controller": "dispatch"}
	dispatchQueue      = map[string]string{"controller": "dispatch", "name": "dispatch"}
)

// scrapeCourier reads Courier's /metrics at addr.
func scrapeCourier(ctx context.Context, addr string) (courierMetrics, error) {
	f, err := promtext.Scrape(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return courierMetrics{}, fmt.Errorf("reading Courier's metrics: %w", err)
	}
	return courierMetricsOf(f), nil
}

// courierMetricsOf takes the dispatch controller's series, and the writes
// to workers, out of an exposition.
func courierMetricsOf(f promtext.Families) courierMetrics {
	var m courierMetrics
	for _, s := range f.Series(reconcileTotal, dispatchController) {
		m.reconciles += s.GetCounter().GetValue()
	}
	m.pass = histogramOf(f.Series(reconcileTime, dispatchController))
	m.queueWait = histogramOf(f.Series(queueDuration, dispatchQueue))
	var writes []*dto.Metric
	for _, s := range f.Series(remoteDuration, nil) {
		switch promtext.Labels(s)["verb"] {
		case "create", "update", "patch", "delete":
			writes = append(writes, s)
		}
	}
	m.workerWrites = histogramOf(writes)
	return m
}

// histogramOf adds up histogram series that share their bounds.
func histogramOf(series []*dto.Metric) histogram {
	var h histogram
	for _, s := range series {
		for _, b := range s.GetHistogram().GetBucket() {
			h.addBucket(b.GetUpperBound(), float64(b.GetCumulativeCount()))
		}
		h.sum += s.GetHistogram().GetSampleSum()
		h.count += float64(s.GetHistogram().GetSampleCount())
	}
	return h
}
