package benchstack

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/courierdev/courier/tools/promtext"
)

func TestParseWatchEvents(t *testing.T) {
	const exposition = `# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="kueue.x-k8s.io",resource="workloads",version="v1beta2"} 120
apiserver_watch_events_total{group="kueue.x-k8s.io",resource="workloads",version="v1beta1"} 3
apiserver_watch_events_total{group="",resource="pods",version="v1"} 40
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="kueue.x-k8s.io",resource="workloads",version="v1beta2",le="+Inf"} 120
apiserver_watch_events_sizes_sum{group="kueue.x-k8s.io",resource="workloads",version="v1beta2"} 240000
apiserver_watch_events_sizes_count{group="kueue.x-k8s.io",resource="workloads",version="v1beta2"} 120
apiserver_watch_events_sizes_bucket{group="",resource="pods",version="v1",le="+Inf"} 40
apiserver_watch_events_sizes_sum{group="",resource="pods",version="v1"} 20000
apiserver_watch_events_sizes_count{group="",resource="pods",version="v1"} 40
`
	f, err := promtext.Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	got := parseWatchEvents(f)
	want := watchTotals{"workloads.kueue.x-k8s.io": {Events: 123, Bytes: 240000}, "pods": {Events: 40, Bytes: 20000}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch events (-want +got):\n%s", diff)
	}
	before := watchTotals{"workloads.kueue.x-k8s.io": {Events: 100, Bytes: 200000}, "pods": {Events: 40, Bytes: 20000}}
	if diff := cmp.Diff(watchTotals{"workloads.kueue.x-k8s.io": {Events: 23, Bytes: 40000}}, got.minus(before)); diff != "" {
		t.Errorf("since before (-want +got):\n%s", diff)
	}
}

func TestEventTally(t *testing.T) {
	tally := newEventTally()
	job := func(labels map[string]string) *trainer.TrainJob {
		return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Labels: labels}}
	}
	tally.seen("worker-1", "trainjobs.trainer.kubeflow.org", job(map[string]string{"courier.dev/origin": "m", runLabel: "r", "app": "x"}))
	tally.seen("worker-1", "trainjobs.trainer.kubeflow.org", job(map[string]string{"courier.dev/origin": "m", runLabel: "r"}))
	tally.seen("worker-1", "trainjobs.trainer.kubeflow.org", job(nil))
	tally.seen("worker-2", "trainjobs.trainer.kubeflow.org", job(nil))
	want := map[string]map[string]float64{"trainjobs.trainer.kubeflow.org": {"bench.courier.dev/run=r,courier.dev/origin=m": 2, "": 1}}
	if diff := cmp.Diff(want, tally.of("worker-1")); diff != "" {
		t.Errorf("worker-1's tally (-want +got):\n%s", diff)
	}
}

func TestAttributeWatchEvents(t *testing.T) {
	courier := Identity{Program: "courier", User: "sa"}
	kueue := Identity{Program: "kueue", User: "sa"}
	gc := Identity{Program: "kube-controller-manager", User: "system:kube-controller-manager"}
	const wl, cq = "workloads.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io"
	// Of 100 Workload events the harness saw, 60 were of Courier's copies
	// and 40 of MultiKueue's.
	seen := map[string]map[string]float64{wl: {"courier.dev/origin=m": 60, "kueue.x-k8s.io/multikueue-origin=m": 40}}
	cases := map[string]struct {
		server watchTotals
		spans  []watchSpan
		seen   map[string]map[string]float64
		want   attributed
	}{
		"a watch gets the events its selector matches, for its share of the window": {
			server: watchTotals{wl: {Events: 200, Bytes: 200 * 1000}},
			spans: []watchSpan{
				{Identity: courier, Resource: wl, Selector: "courier.dev/origin=m", Seconds: 100},
				{Identity: kueue, Resource: wl, Selector: "kueue.x-k8s.io/multikueue-origin=m", Seconds: 100},
				{Identity: gc, Resource: wl, Seconds: 50},
				{Identity: gc, Resource: wl, Seconds: 50},
			},
			seen: seen,
			want: attributed{byIdentity: map[Identity]watchTotals{
				courier: {wl: {Events: 60, Bytes: 60000}},
				kueue:   {wl: {Events: 40, Bytes: 40000}},
				gc:      {wl: {Events: 100, Bytes: 100000}},
			}, unattributed: watchTotals{}},
		},
		"what no model tells is shared by seconds among the other watches": {
			server: watchTotals{cq: {Events: 30, Bytes: 3000}, wl: {Events: 70, Bytes: 7000}},
			spans: []watchSpan{
				{Identity: courier, Resource: cq, Seconds: 100},
				{Identity: kueue, Resource: cq, Seconds: 50},
				// A namespace the harness did not watch.
				{Identity: gc, Resource: wl, Namespace: "kube-system", Seconds: 100},
				{Identity: courier, Resource: wl, Selector: "courier.dev/origin=m", Seconds: 100},
			},
			seen: seen,
			want: attributed{byIdentity: map[Identity]watchTotals{
				courier: {cq: {Events: 20, Bytes: 2000}, wl: {Events: 60, Bytes: 6000}},
				kueue:   {cq: {Events: 10, Bytes: 1000}},
				gc:      {wl: {Events: 10, Bytes: 1000}},
			}, unattributed: watchTotals{}},
		},
		"events modelled beyond the API server's count are scaled to it": {
			server: watchTotals{wl: {Events: 50, Bytes: 5000}},
			spans: []watchSpan{
				{Identity: courier, Resource: wl, Selector: "courier.dev/origin=m", Seconds: 100},
				{Identity: kueue, Resource: wl, Selector: "kueue.x-k8s.io/multikueue-origin=m", Seconds: 100},
			},
			seen: seen,
			want: attributed{byIdentity: map[Identity]watchTotals{
				courier: {wl: {Events: 30, Bytes: 3000}},
				kueue:   {wl: {Events: 20, Bytes: 2000}},
			}, unattributed: watchTotals{}},
		},
		"events no watch of the window could take are left unattributed": {
			server: watchTotals{"pods": {Events: 12, Bytes: 1200}},
			want:   attributed{byIdentity: map[Identity]watchTotals{}, unattributed: watchTotals{"pods": {Events: 12, Bytes: 1200}}},
		},
		"a selector on labels the harness does not count is shared by seconds": {
			server: watchTotals{wl: {Events: 10, Bytes: 100}},
			spans:  []watchSpan{{Identity: kueue, Resource: wl, Selector: "app=x", Seconds: 10}},
			seen:   seen,
			want: attributed{byIdentity: map[Identity]watchTotals{kueue: {wl: {Events: 10, Bytes: 100}}},
				unattributed: watchTotals{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := attributeWatchEvents(tc.server, tc.spans, tc.seen, 100)
			approx := cmpopts.EquateApprox(0, 1e-9)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(attributed{}), approx); diff != "" {
				t.Errorf("attributed (-want +got):\n%s", diff)
			}
			var sum float64
			for _, byResource := range got.byIdentity {
				for _, w := range byResource {
					sum += w.Events
				}
			}
			for _, w := range got.unattributed {
				sum += w.Events
			}
			var server float64
			for _, w := range tc.server {
				server += w.Events
			}
			if math.Abs(sum-server) > 1e-6 {
				t.Errorf("attributed %g events in all, the API server counted %g", sum, server)
			}
		})
	}
}
