package placement

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// TestPlanAnyInput runs Plan on random inputs, absurd numbers included,
// and checks that it does not panic and that its decision holds together.
func TestPlanAnyInput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	numbers := []int64{0, 1, 1000, 4000, -1000, math.MaxInt64, math.MinInt64}
	num := func() int64 { return numbers[r.IntN(len(numbers))] }
	resources := []corev1.ResourceName{cpu, gpu, memory}
	filter := must(CompileFilter(`cluster.labels.zone == "eu"`))
	score := must(CompileScore(`cluster.capacity["nvidia.com/gpu"].free`))
	strategies := []courier.DispatchStrategy{"", courier.AllAtOnce, courier.BestFit, courier.Incremental, "Bogus"}

	for range 2000 {
		in := Input{
			Policy: Policy{Strategy: strategies[r.IntN(len(strategies))], FanOut: r.IntN(4) - 1, StepSize: r.IntN(4) - 1,
				RoundTimeout: time.Duration(r.IntN(3)-1) * time.Minute, MaxWaitTime: time.Duration(r.IntN(3)) * time.Minute},
			Started: t0, Now: t0.Add(time.Duration(r.IntN(600)-60) * time.Second),
		}
		if r.IntN(2) == 0 {
			in.Policy.Filter = filter
		}
		if r.IntN(2) == 0 {
			in.Policy.Score = score
		}
		for range r.IntN(3) {
			ps := PodSet{Name: "p", Count: int32(num() % math.MaxInt32), Requests: map[corev1.ResourceName]int64{}}
			for _, res := range resources[:r.IntN(len(resources)+1)] {
				ps.Requests[res] = num()
			}
			in.Workload.PodSets = append(in.Workload.PodSets, ps)
		}
		for range r.IntN(6) {
			c := Cluster{Name: string(rune('a' + r.IntN(5))), Capacity: Capacity{Known: r.IntN(4) > 0}}
			if r.IntN(2) == 0 {
				c.Labels = map[string]string{"zone": "eu"}
			}
			if r.IntN(5) == 0 {
				c.Unusable = "not connected"
			}
			for range r.IntN(3) {
				f := Flavor{Resources: map[corev1.ResourceName]Quota{}}
				for _, res := range resources[:r.IntN(len(resources)+1)] {
					f.Resources[res] = Quota{Nominal: num(), Borrowable: num(), Usage: num(), Pending: num()}
				}
				c.Capacity.Flavors = append(c.Capacity.Flavors, f)
			}
			in.Clusters = append(in.Clusters, c)
			if r.IntN(3) == 0 {
				in.Nominated = append(in.Nominated, c.Name)
			}
		}

		d := Plan(in)

		names := map[string]bool{}
		for _, c := range in.Clusters {
			names[c.Name] = true
		}
		eligible := map[string]bool{}
		for _, v := range d.Considered {
			if v.Eligible {
				eligible[v.Cluster] = true
			}
		}
		switch {
		case len(d.Considered) != len(names):
			t.Fatalf("%d verdicts for %d clusters: %+v", len(d.Considered), len(names), d)
		case len(eligible) > 0 && len(d.Nominate) == 0:
			t.Fatalf("eligible clusters, none nominated: %+v", d)
		case len(d.Message) > maxMessage || !strings.HasSuffix(d.Message, "."):
			t.Fatalf("message: %q", d.Message)
		case d.NextRound < 0 || d.NextRound > max(in.Policy.RoundTimeout, courier.DefaultRoundTimeout):
			t.Fatalf("NextRound %v: %+v", d.NextRound, d)
		}
		for _, n := range d.Nominate {
			if !eligible[n] {
				t.Fatalf("%s nominated, not eligible: %+v", n, d)
			}
		}
	}
}
