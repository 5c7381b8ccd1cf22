package benchstack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/promtext"
)

func TestDispatchPasses(t *testing.T) {
	cases := map[string]struct {
		exposition string
		want       float64
	}{
		"the dispatch controller's passes, whatever their result": {
			exposition: `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="dispatch",result="success"} 230
controller_runtime_reconcile_total{controller="dispatch",result="requeue_after"} 12
controller_runtime_reconcile_total{controller="dispatch",result="error"} 3
controller_runtime_reconcile_total{controller="workercluster",result="success"} 40
`,
			want: 245,
		},
		"no pass yet": {
			exposition: `# TYPE courier_pending_workloads gauge
courier_pending_workloads{check="courier"} 0
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			families, err := promtext.Parse(strings.NewReader(tc.exposition))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, dispatchPasses(families)); diff != "" {
				t.Errorf("dispatchPasses (-want +got):\n%s", diff)
			}
		})
	}
}
