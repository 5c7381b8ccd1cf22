package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	workloadGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	secretGVK   = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

func TestWatchCounters(t *testing.T) {
	collectors := []interface{ Reset() }{ManagerWatchEvents, ManagerWatchEventBytes, RemoteWatchEvents, RemoteWatchEventBytes}
	for _, c := range collectors {
		c.Reset()
	}
	t.Cleanup(func() {
		for _, c := range collectors {
			c.Reset()
		}
	})
	workloads := ManagerWatchCounter(workloadGVK)
	workloads(1200)
	workloads(800)
	ManagerWatchCounter(secretGVK)(300)
	copies := RemoteWatchCounter("worker-1")(workloadGVK)
	copies(500)
	// A counter of a watch started again adds to the same series.
	RemoteWatchCounter("worker-1")(workloadGVK)(700)

	want := map[string]float64{
		`courier_manager_watch_events_total{kind="Workload.kueue.x-k8s.io"}`:                        2,
		`courier_manager_watch_event_bytes_total{kind="Workload.kueue.x-k8s.io"}`:                   2000,
		`courier_manager_watch_events_total{kind="Secret"}`:                                         1,
		`courier_manager_watch_event_bytes_total{kind="Secret"}`:                                    300,
		`courier_remote_watch_events_total{cluster="worker-1",kind="Workload.kueue.x-k8s.io"}`:      2,
		`courier_remote_watch_event_bytes_total{cluster="worker-1",kind="Workload.kueue.x-k8s.io"}`: 1200,
	}
	got := series(t, ManagerWatchEvents, ManagerWatchEventBytes, RemoteWatchEvents, RemoteWatchEventBytes)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}
