package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// series flattens what the collectors export, as
// name{label="value",...}, with a histogram as its _count and _sum.
func series(t *testing.T, collectors ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collectors...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := "{" + strings.Join(labels, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[f.GetName()+"_count"+key] = float64(m.GetHistogram().GetSampleCount())
				out[f.GetName()+"_sum"+key] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_COUNTER:
				out[f.GetName()+key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[f.GetName()+key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func resetDispatch() {
	for _, c := range dispatchCollectors {
		c.(interface{ Reset() }).Reset()
	}
}

func TestRecording(t *testing.T) {
	cases := map[string]struct {
		record func()
		want   map[string]float64
	}{
		"a dispatch 90s after the quota reservation": {
			record: func() { ObserveDispatchLatency("a", t0, t0.Add(90*time.Second)) },
			want: map[string]float64{
				`courier_dispatch_latency_seconds_count{cluster="a"}`: 1,
				`courier_dispatch_latency_seconds_sum{cluster="a"}`:   90,
			},
		},
		"a reservation after the write, by a skewed clock, counts as zero": {
			record: func() { ObserveDispatchLatency("a", t0.Add(time.Second), t0) },
			want: map[string]float64{
				`courier_dispatch_latency_seconds_count{cluster="a"}`: 1,
				`courier_dispatch_latency_seconds_sum{cluster="a"}`:   0,
			},
		},
		"job copies created": {
			record: func() { Dispatched("a"); Dispatched("a"); Dispatched("b") },
			want: map[string]float64{
				`courier_workloads_dispatched_total{cluster="a"}`: 2,
				`courier_workloads_dispatched_total{cluster="b"}`: 1,
			},
		},
		"an admission taken: admitted, and a Placed decision": {
			record: func() { Placed("a") },
			want: map[string]float64{
				`courier_workloads_admitted_total{cluster="a"}`:       1,
				`courier_placement_decisions_total{outcome="Placed"}`: 1,
			},
		},
		"refusals by reason": {
			record: func() { Rejected("a", courier.EventForeignObject); Rejected("b", courier.EventNoCapacity) },
			want: map[string]float64{
				`courier_workloads_rejected_total{cluster="a",reason="ForeignObject"}`: 1,
				`courier_workloads_rejected_total{cluster="b",reason="NoCapacity"}`:    1,
			},
		},
		"a worker's eviction is a re-dispatch and an eviction by the worker": {
			record: func() { Redispatched("a", courier.EventRemoteEvicted) },
			want: map[string]float64{
				`courier_workloads_redispatched_total{cluster="a",reason="RemoteEvicted"}`: 1,
				`courier_workloads_evicted_total{cluster="a",direction="worker"}`:          1,
			},
		},
		"a lost worker is a re-dispatch, not an eviction": {
			record: func() { Redispatched("a", courier.EventWorkerLost) },
			want: map[string]float64{
				`courier_workloads_redispatched_total{cluster="a",reason="WorkerLost"}`: 1,
			},
		},
		"an eviction by the manager": {
			record: func() { EvictedByManager("a") },
			want: map[string]float64{
				`courier_workloads_evicted_total{cluster="a",direction="manager"}`: 1,
			},
		},
		"a decision with the planner's verdicts": {
			record: func() {
				Decided(DecisionNominated, map[string]string{"a": VerdictNominated, "b": VerdictFilteredOut})
				Decided(DecisionWaiting, nil)
			},
			want: map[string]float64{
				`courier_placement_decisions_total{outcome="Nominated"}`:              1,
				`courier_placement_decisions_total{outcome="Waiting"}`:                1,
				`courier_placement_verdicts_total{cluster="a",verdict="Nominated"}`:   1,
				`courier_placement_verdicts_total{cluster="b",verdict="FilteredOut"}`: 1,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resetDispatch()
			tc.record()
			if diff := cmp.Diff(tc.want, series(t, dispatchCollectors...)); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
		})
	}
}

// touchAll gives every per-worker metric a series for cluster c.
func touchAll(c string) {
	WorkerConnected.WithLabelValues(c).Set(1)
	WorkerReconnects.WithLabelValues(c).Inc()
	RemoteRequestDuration.WithLabelValues(c, "get").Observe(0.1)
	RemoteRequestErrors.WithLabelValues(c, "get", "none").Inc()
	FenceAnswering(c, true)
	Credential(c, t0, true)
	CredentialPluginRuns.WithLabelValues(c, "plugin", "success").Inc()
	SelfFault(false)
	ObserveDispatchLatency(c, t0, t0)
	Dispatched(c)
	Placed(c)
	Rejected(c, courier.EventNamespaceMissing)
	Redispatched(c, courier.EventRemoteEvicted)
	EvictedByManager(c)
	Decided(DecisionNominated, map[string]string{c: VerdictNominated})
	ManagerWatchCounter(workloadGVK)(100)
	RemoteWatchCounter(c)(workloadGVK)(100)
}

func TestForgetWorker(t *testing.T) {
	resetDispatch()
	connection := []prometheus.Collector{WorkerConnected, WorkerReconnects, RemoteRequestDuration, RemoteRequestErrors, RemoteWatchEvents, RemoteWatchEventBytes}
	for _, c := range connection {
		c.(interface{ Reset() }).Reset()
	}
	touchAll("gone")
	touchAll("kept")
	ForgetWorker("gone")
	got := series(t, append(slices.Clone(dispatchCollectors), connection...)...)
	for key := range got {
		if strings.Contains(key, `"gone"`) {
			t.Errorf("series %s of a forgotten worker is still exported", key)
		}
	}
	if got[`courier_workloads_evicted_total{cluster="kept",direction="manager"}`] != 1 || got[`courier_placement_decisions_total{outcome="Nominated"}`] != 2 {
		t.Errorf("series of the other worker, or without a cluster, went too: %v", got)
	}
}
