package cluster

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/courierdev/courier/pkg/metrics"
)

func TestDisconnectKeepsTheWorkerInTheMetrics(t *testing.T) {
	c := NewCache(Options{})
	c.Disconnect("misconfigured")
	if got := testutil.ToFloat64(metrics.WorkerConnected.WithLabelValues("misconfigured")); got != 0 {
		t.Errorf("courier_worker_cluster_connected = %v after Disconnect, want 0", got)
	}
	c.Remove("misconfigured")
	if n := testutil.CollectAndCount(metrics.WorkerConnected); n != 0 {
		t.Errorf("%d series left after Remove, want 0", n)
	}
}
