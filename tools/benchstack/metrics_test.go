package benchstack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/promtext"
)

func TestParseCourier(t *testing.T) {
	cases := map[string]struct {
		exposition string
		want       courierCounts
	}{
		"the dispatch controller's passes, whatever their result": {
			exposition: `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="dispatch",result="success"} 230
controller_runtime_reconcile_total{controller="dispatch",result="requeue_after"} 12
controller_runtime_reconcile_total{controller="dispatch",result="error"} 3
controller_runtime_reconcile_total{controller="workercluster",result="success"} 40
`,
			want: courierCounts{Passes: 245, Watch: watchTotals{}},
		},
		"the watch events read, summed over kinds and workers": {
			exposition: `# TYPE courier_manager_watch_events_total counter
courier_manager_watch_events_total{kind="Workload.kueue.x-k8s.io"} 40
courier_manager_watch_events_total{kind="TrainJob.trainer.kubeflow.org"} 10
# TYPE courier_manager_watch_event_bytes_total counter
courier_manager_watch_event_bytes_total{kind="Workload.kueue.x-k8s.io"} 120000
courier_manager_watch_event_bytes_total{kind="TrainJob.trainer.kubeflow.org"} 20000
# TYPE courier_remote_watch_events_total counter
courier_remote_watch_events_total{cluster="worker-1",kind="Workload.kueue.x-k8s.io"} 7
courier_remote_watch_events_total{cluster="worker-2",kind="Workload.kueue.x-k8s.io"} 5
# TYPE courier_remote_watch_event_bytes_total counter
courier_remote_watch_event_bytes_total{cluster="worker-1",kind="Workload.kueue.x-k8s.io"} 7000
courier_remote_watch_event_bytes_total{cluster="worker-2",kind="Workload.kueue.x-k8s.io"} 5000
`,
			want: courierCounts{Watch: watchTotals{
				"manager Workload.kueue.x-k8s.io":       {Events: 40, Bytes: 120000},
				"manager TrainJob.trainer.kubeflow.org": {Events: 10, Bytes: 20000},
				"workers Workload.kueue.x-k8s.io":       {Events: 12, Bytes: 12000},
			}},
		},
		"no pass yet": {
			exposition: `# TYPE courier_pending_workloads gauge
courier_pending_workloads{check="courier"} 0
`,
			want: courierCounts{Watch: watchTotals{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			families, err := promtext.Parse(strings.NewReader(tc.exposition))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, parseCourier(families)); diff != "" {
				t.Errorf("parseCourier (-want +got):\n%s", diff)
			}
		})
	}
}
