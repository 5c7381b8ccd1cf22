package benchscale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// remoteWrite matches the labels of a write to a worker.
var remoteWrite = regexp.MustCompile(`verb="(create|update|patch|delete)"`)

// scrapeCourier reads Courier's /metrics at addr.
func scrapeCourier(ctx context.Context, addr string) (courierMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return courierMetrics{}, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return courierMetrics{}, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return courierMetrics{}, fmt.Errorf("scraping Courier's metrics: %s", resp.Status)
	}
	m, err := parseCourierMetrics(resp.Body)
	if err != nil {
		return m, fmt.Errorf("scraping Courier's metrics: %w", err)
	}
	return m, nil
}

// parseCourierMetrics reads the dispatch controller's series from a text
// exposition.
func parseCourierMetrics(r io.Reader) (courierMetrics, error) {
	var m courierMetrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, labels, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		var h *histogram
		series := name
		switch {
		case !strings.Contains(labels, dispatchController):
			if !strings.HasPrefix(name, remoteDuration+"_") || !remoteWrite.MatchString(labels) {
				continue
			}
			h, series = &m.workerWrites, strings.TrimPrefix(name, remoteDuration)
		case name == reconcileTotal:
			h = nil
		case strings.HasPrefix(name, reconcileTime+"_"):
			h, series = &m.pass, strings.TrimPrefix(name, reconcileTime)
		case strings.HasPrefix(name, queueDuration+"_") && strings.Contains(labels, `name="dispatch"`):
			h, series = &m.queueWait, strings.TrimPrefix(name, queueDuration)
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return m, fmt.Errorf("%q: %w", line, err)
		}
		if h == nil {
			m.reconciles += v
			continue
		}
		switch series {
		case "_sum":
			h.sum += v
		case "_count":
			h.count += v
		case "_bucket":
			le, err := bucketBound(labels)
			if err != nil {
				return m, fmt.Errorf("%q: %w", line, err)
			}
			h.addBucket(le, v)
		}
	}
	return m, sc.Err()
}

func bucketBound(labels string) (float64, error) {
	_, rest, ok := strings.Cut(labels, `le="`)
	if !ok {
		return 0, fmt.Errorf("a bucket without le")
	}
	le, _, _ := strings.Cut(rest, `"`)
	return strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf.
}
