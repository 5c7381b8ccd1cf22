package promtext

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const exposition = `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="dispatch",result="success"} 90
controller_runtime_reconcile_total{controller="dispatch",result="error"} 3
controller_runtime_reconcile_total{controller="workercluster",result="success"} 7
# TYPE courier_remote_request_duration_seconds histogram
courier_remote_request_duration_seconds_bucket{cluster="w1",verb="create",le="0.1"} 8
courier_remote_request_duration_seconds_bucket{cluster="w1",verb="create",le="+Inf"} 10
courier_remote_request_duration_seconds_sum{cluster="w1",verb="create"} 2
courier_remote_request_duration_seconds_count{cluster="w1",verb="create"} 10
`

func TestSeries(t *testing.T) {
	f, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		name  string
		match map[string]string
		want  []map[string]string
	}{
		"every series of a family": {
			name: "controller_runtime_reconcile_total",
			want: []map[string]string{
				{"controller": "dispatch", "result": "success"},
				{"controller": "dispatch", "result": "error"},
				{"controller": "workercluster", "result": "success"},
			},
		},
		"those whose labels match": {
			name:  "controller_runtime_reconcile_total",
			match: map[string]string{"controller": "dispatch"},
			want: []map[string]string{
				{"controller": "dispatch", "result": "success"},
				{"controller": "dispatch", "result": "error"},
			},
		},
		"a histogram's series": {
			name: "courier_remote_request_duration_seconds",
			want: []map[string]string{{"cluster": "w1", "verb": "create"}},
		},
		"a family the exposition lacks": {name: "courier_pending_workloads"},
		"no series matches":             {name: "controller_runtime_reconcile_total", match: map[string]string{"controller": "gc"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []map[string]string
			for _, m := range f.Series(tc.name, tc.match) {
				got = append(got, Labels(m))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Series (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRefusesWhatIsNotAnExposition(t *testing.T) {
	if _, err := Parse(strings.NewReader("<html>not found</html>\n")); err == nil {
		t.Error("Parse() of an HTML page = nil error, want one")
	}
}
