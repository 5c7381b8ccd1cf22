package benchscale

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/promtext"
)

const exposition = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="dispatch",result="success"} 90
controller_runtime_reconcile_total{controller="dispatch",result="requeue_after"} 10
controller_runtime_reconcile_total{controller="dispatchpolicy",result="success"} 7
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="dispatch",le="0.005"} 50
controller_runtime_reconcile_time_seconds_bucket{controller="dispatch",le="0.1"} 96
controller_runtime_reconcile_time_seconds_bucket{controller="dispatch",le="1"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="dispatch",le="+Inf"} 100
controller_runtime_reconcile_time_seconds_sum{controller="dispatch"} 2
controller_runtime_reconcile_time_seconds_count{controller="dispatch"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="dispatchpolicy",le="0.005"} 7
controller_runtime_reconcile_time_seconds_bucket{controller="dispatchpolicy",le="+Inf"} 7
controller_runtime_reconcile_time_seconds_sum{controller="dispatchpolicy"} 0.01
controller_runtime_reconcile_time_seconds_count{controller="dispatchpolicy"} 7
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="dispatch",name="dispatch",le="1e-05"} 80
workqueue_queue_duration_seconds_bucket{controller="dispatch",name="dispatch",le="0.001"} 90
workqueue_queue_duration_seconds_bucket{controller="dispatch",name="dispatch",le="10"} 100
workqueue_queue_duration_seconds_bucket{controller="dispatch",name="dispatch",le="+Inf"} 100
workqueue_queue_duration_seconds_sum{controller="dispatch",name="dispatch"} 5
workqueue_queue_duration_seconds_count{controller="dispatch",name="dispatch"} 100
# TYPE courier_remote_request_duration_seconds histogram
courier_remote_request_duration_seconds_bucket{cluster="w1",verb="create",le="0.1"} 8
courier_remote_request_duration_seconds_bucket{cluster="w1",verb="create",le="1"} 10
courier_remote_request_duration_seconds_bucket{cluster="w1",verb="create",le="+Inf"} 10
courier_remote_request_duration_seconds_sum{cluster="w1",verb="create"} 2
courier_remote_request_duration_seconds_count{cluster="w1",verb="create"} 10
courier_remote_request_duration_seconds_bucket{cluster="w2",verb="delete",le="0.1"} 10
courier_remote_request_duration_seconds_bucket{cluster="w2",verb="delete",le="1"} 10
courier_remote_request_duration_seconds_bucket{cluster="w2",verb="delete",le="+Inf"} 10
courier_remote_request_duration_seconds_sum{cluster="w2",verb="delete"} 0.5
courier_remote_request_duration_seconds_count{cluster="w2",verb="delete"} 10
courier_remote_request_duration_seconds_bucket{cluster="w2",verb="get",le="0.1"} 0
courier_remote_request_duration_seconds_bucket{cluster="w2",verb="get",le="1"} 0
courier_remote_request_duration_seconds_bucket{cluster="w2",verb="get",le="+Inf"} 50
courier_remote_request_duration_seconds_sum{cluster="w2",verb="get"} 500
courier_remote_request_duration_seconds_count{cluster="w2",verb="get"} 50
`

func TestCourierMetricsOf(t *testing.T) {
	f, err := promtext.Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	m := courierMetricsOf(f)
	if m.reconciles != 100 {
		t.Errorf("reconciles = %v, want 100 (the dispatch controller's only)", m.reconciles)
	}
	want := histogram{bounds: []float64{0.005, 0.1, 1, math.Inf(1)}, counts: []float64{50, 96, 100, 100}, sum: 2, count: 100}
	if diff := cmp.Diff(want, m.pass, cmp.AllowUnexported(histogram{})); diff != "" {
		t.Errorf("pass (-want +got):\n%s", diff)
	}
	if got, want := m.queueWait.spread(), (Spread{MeanSeconds: 0.05, P50AtMost: 1e-05, P95AtMost: 10}); got != want {
		t.Errorf("queue wait spread = %+v, want %+v", got, want)
	}
	// Writes to every worker add up; reads are left out.
	want = histogram{bounds: []float64{0.1, 1, math.Inf(1)}, counts: []float64{18, 20, 20}, sum: 2.5, count: 20}
	if diff := cmp.Diff(want, m.workerWrites, cmp.AllowUnexported(histogram{})); diff != "" {
		t.Errorf("worker writes (-want +got):\n%s", diff)
	}
}

func TestHistogramSince(t *testing.T) {
	bounds := []float64{0.01, 0.1, 1, math.Inf(1)}
	cases := map[string]struct {
		before, after histogram
		want          Spread
	}{
		"only what the phase added counts": {
			before: histogram{bounds: bounds, counts: []float64{100, 100, 100, 100}, sum: 0.5, count: 100},
			after:  histogram{bounds: bounds, counts: []float64{100, 105, 120, 120}, sum: 4.5, count: 120},
			want:   Spread{MeanSeconds: 0.2, P50AtMost: 1, P95AtMost: 1},
		},
		"nothing in the phase": {
			before: histogram{bounds: bounds, counts: []float64{1, 1, 1, 1}, sum: 0.001, count: 1},
			after:  histogram{bounds: bounds, counts: []float64{1, 1, 1, 1}, sum: 0.001, count: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.after.since(tc.before).spread()); diff != "" {
				t.Errorf("spread (-want +got):\n%s", diff)
			}
		})
	}
}
