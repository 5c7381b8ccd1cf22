package benchscale

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierdev/courier/tools/benchreport"
)

func TestStackShares(t *testing.T) {
	from := map[string]time.Duration{"kube-apiserver": 10 * time.Second, "courier": time.Second, loadDriver: 0}
	to := map[string]time.Duration{"kube-apiserver": 16 * time.Second, "courier": 2 * time.Second, loadDriver: time.Second}
	var names []string
	var stack []float64
	for _, p := range stackShares(from, to, 10*time.Second) {
		names = append(names, p.Name)
		stack = append(stack, p.Stack)
	}
	if diff := cmp.Diff([]string{"kube-apiserver", "courier", loadDriver}, names); diff != "" {
		t.Errorf("kinds, largest first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{0.75, 0.125, 0.125}, stack); diff != "" {
		t.Errorf("shares of the stack (-want +got):\n%s", diff)
	}
}

func TestThroughputVerdictSaysWhoseMachineItWas(t *testing.T) {
	cases := map[string]struct {
		stack []benchreport.ProcessCPU
		want  string
	}{
		"Courier's share measured": {
			stack: []benchreport.ProcessCPU{{Name: "kube-apiserver", Machine: 0.775}, {Name: "courier", Machine: 0.087}},
			want:  "W=2 N=1000: 28.0/s; the machine 96% busy, Courier 8.7% of it",
		},
		"results from before the stack was measured": {
			want: "W=2 N=1000: 28.0/s",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Result{Workers: 2, Workloads: 1000}
			r.Backlog.Throughput = 28
			r.Backlog.Cost.MachineBusy = 0.96
			r.Backlog.Cost.Stack = tc.stack
			var got string
			for _, v := range evaluate([]*Result{r}) {
				if v.Target == "≥ 100 workloads/s on 2 workers" {
					got = v.Detail
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("detail (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStackLine(t *testing.T) {
	got := stackLine([]benchreport.ProcessCPU{{Name: "kube-apiserver", Machine: 0.775}, {Name: "courier", Machine: 0.087}})
	if diff := cmp.Diff("kube-apiserver 77.5%, courier 8.7%", got); diff != "" {
		t.Errorf("stackLine (-want +got):\n%s", diff)
	}
}
