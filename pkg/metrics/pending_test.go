package metrics

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPendingWorkloads(t *testing.T) {
	const header = `# HELP courier_pending_workloads Manager Workloads on which Courier's admission check is Pending, by check name; exported by the leader only.
# TYPE courier_pending_workloads gauge
`
	cases := map[string]struct {
		count PendingCounter
		want  string
	}{
		"no dispatcher running: no series": {},
		"counts by check, an empty check at zero": {
			count: func() (map[string]int, error) { return map[string]int{"gpu": 3, "cpu": 0}, nil },
			want: header + `courier_pending_workloads{check="cpu"} 0
courier_pending_workloads{check="gpu"} 3
`,
		},
		"a cache that cannot answer: no series, not zero": {
			count: func() (map[string]int, error) { return nil, errors.New("cache not started") },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			CountPendingWith(tc.count)
			t.Cleanup(func() { CountPendingWith(nil) })
			if err := testutil.CollectAndCompare(pending, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDispatchExpectations(t *testing.T) {
	CountExpectationsWith(func() map[string]int { return map[string]int{"deleted": 12, "written": 0} })
	t.Cleanup(func() { CountExpectationsWith(nil) })
	want := `# HELP courier_dispatch_expectations Entries the dispatcher keeps of what it did that its caches may not show yet, by kind; exported by the leader only.
# TYPE courier_dispatch_expectations gauge
courier_dispatch_expectations{kind="deleted"} 12
courier_dispatch_expectations{kind="written"} 0
`
	if err := testutil.CollectAndCompare(expectations, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	CountExpectationsWith(nil)
	if err := testutil.CollectAndCompare(expectations, strings.NewReader("")); err != nil {
		t.Errorf("no dispatcher running: %v", err)
	}
}
