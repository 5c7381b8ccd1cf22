package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// gpus is a flavor of whole GPUs.
func gpus(name string, nominal, usage int64) Flavor {
	return Flavor{Name: name, Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: nominal * 1000, Usage: usage * 1000}}}
}

// queue is the known capacity of ClusterQueue "cq".
func queue(fs ...Flavor) Capacity { return Capacity{Known: true, ClusterQueue: "cq", Flavors: fs} }

func cluster(name string, c Capacity) Cluster { return Cluster{Name: name, Capacity: c} }

func pods(name string, count int32, gpusEach int64) PodSet {
	return PodSet{Name: name, Count: count, Requests: map[corev1.ResourceName]int64{gpu: gpusEach * 1000}}
}

// twoGPUs is the usual workload: two pods of one GPU.
var twoGPUs = Workload{Namespace: "ns", Queue: "lq", PodSets: []PodSet{pods("main", 2, 1)}}

// abc are three clusters of 8 GPUs; for twoGPUs the default score ranks
// them a (0.75), c (0.5), b (0.25).
func abc() []Cluster {
	return []Cluster{
		cluster("a", queue(gpus("f", 8, 0))),
		cluster("b", queue(gpus("f", 8, 4))),
		cluster("c", queue(gpus("f", 8, 2))),
	}
}

func eligible(name string, score float64) Verdict {
	return Verdict{Cluster: name, Eligible: true, Score: score}
}

func passed(name, reason string) Verdict { return Verdict{Cluster: name, Reason: reason} }

// preempts is an eligible cluster whose copy would have to preempt.
func preempts(name string, score float64) Verdict {
	return Verdict{Cluster: name, Eligible: true, Score: score, Preempts: true}
}

var abcRanked = []Verdict{eligible("a", 0.75), eligible("c", 0.5), eligible("b", 0.25)}

func compiled(spec courier.DispatchPolicySpec) Policy {
	p, err := Compile(spec)
	if err != nil {
		panic(err)
	}
	return p
}

func bestFit(fanOut int) Policy {
	return Policy{Strategy: courier.BestFit, FanOut: fanOut, StepSize: 1, RoundTimeout: time.Minute}
}

// errorText compares errors by their text: the table cannot hold the
// same error values as Plan makes.
var errorText = cmp.Comparer(func(a, b error) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Error() == b.Error()
})

func TestPlan(t *testing.T) {
	tooSmall := queue(gpus("f", 1, 0))
	cases := map[string]struct {
		in   Input
		want Decision
	}{
		"the default policy is BestFit with fanOut 1: the best only": {
			in: Input{Policy: compiled(courier.DispatchPolicySpec{}), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0},
			want: Decision{Nominate: []string{"a"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a (best of 3; 2 more eligible in later rounds)."},
		},
		"BestFit fanOut 2: the best two": {
			in: Input{Policy: bestFit(2), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(10 * time.Second)},
			want: Decision{Nominate: []string{"a", "c"}, Considered: abcRanked, NextRound: 50 * time.Second,
				Message: "Nominated a, c (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"BestFit after one roundTimeout: one more, and the next round is due at 2m": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(90 * time.Second)},
			want: Decision{Nominate: []string{"a", "c"}, Considered: abcRanked, NextRound: 30 * time.Second,
				Message: "Nominated a, c (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"BestFit after two roundTimeouts: every cluster, no next round": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(2 * time.Minute)},
			want: Decision{Nominate: []string{"a", "c", "b"}, Considered: abcRanked,
				Message: "Nominated a, c, b (best 3 of 3)."},
		},
		"AllAtOnce: every eligible cluster at once": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce, RoundTimeout: time.Minute}, Workload: twoGPUs,
				Clusters: append(abc(), cluster("d", tooSmall)), Started: t0, Now: t0},
			want: Decision{Nominate: []string{"a", "c", "b"},
				Considered: append(abcRanked[:3:3], passed("d", "ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1")),
				Message:    "Nominated a, c, b (best 3 of 4). Passed over: d: ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1."},
		},
		"Incremental stepSize 1, at the first round boundary: two": {
			in: Input{Policy: Policy{Strategy: courier.Incremental, StepSize: 1, RoundTimeout: time.Minute}, Workload: twoGPUs,
				Clusters: abc(), Started: t0, Now: t0.Add(time.Minute)},
			want: Decision{Nominate: []string{"a", "c"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a, c (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"Incremental stepSize 2 in its first round": {
			in: Input{Policy: Policy{Strategy: courier.Incremental, StepSize: 2, RoundTimeout: 30 * time.Second}, Workload: twoGPUs,
				Clusters: abc(), Started: t0, Now: t0.Add(20 * time.Second)},
			want: Decision{Nominate: []string{"a", "c"}, Considered: abcRanked, NextRound: 10 * time.Second,
				Message: "Nominated a, c (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"rounds count from the first nomination, not from when the wait began": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, RoundsSince: t0.Add(5 * time.Minute), Now: t0.Add(5 * time.Minute)},
			want: Decision{Nominate: []string{"a"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a (best of 3; 2 more eligible in later rounds)."},
		},
		"a round after the first nomination: one more": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, RoundsSince: t0.Add(4 * time.Minute), Now: t0.Add(5 * time.Minute)},
			want: Decision{Nominate: []string{"a", "c"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a, c (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"nominated before, still eligible with room: kept in the round's place; unknown names ignored": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0, Nominated: []string{"b", "gone"}},
			want: Decision{Nominate: []string{"b"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated b (best of 3; 2 more eligible in later rounds)."},
		},
		"nominated before, in a later round: kept, and the best others with room fill the places": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(time.Minute), Nominated: []string{"b"}},
			want: Decision{Nominate: []string{"a", "b"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a, b (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"nominated before, no room now, another with room: that one is added at once": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0, Nominated: []string{"a"},
				Clusters: []Cluster{cluster("a", queue(gpus("f", 8, 7))), cluster("b", queue(gpus("f", 8, 4)))}},
			want: Decision{Nominate: []string{"b", "a"}, Considered: []Verdict{eligible("b", 0.25), preempts("a", -0.125)}, Preempting: "a",
				Message: "Nominated b, a (best 2 of 2). a may preempt."},
		},
		"nominated before, no room anywhere, in a later round: no copy is added": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0.Add(2 * time.Minute), Nominated: []string{"a"},
				Clusters: []Cluster{cluster("a", queue(gpus("f", 8, 7))), cluster("b", queue(gpus("f", 8, 8)))}},
			want: Decision{Nominate: []string{"a"}, Considered: []Verdict{preempts("a", -0.125), preempts("b", -0.25)}, Preempting: "a", HeldBack: 1,
				Message: "Nominated a (best of 2). a may preempt; 1 more would have to and wait, as one cluster preempts at a time."},
		},
		"nominated before, no longer usable: dropped": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0, Nominated: []string{"a"},
				Clusters: []Cluster{{Name: "a", Unusable: "not connected", Capacity: queue(gpus("f", 8, 0))}, cluster("b", queue(gpus("f", 8, 4)))}},
			want: Decision{Nominate: []string{"b"}, Considered: []Verdict{eligible("b", 0.25), passed("a", "not connected")},
				Message: "Nominated b (best of 2). Passed over: a: not connected."},
		},
		"the message of the example: usable, unusable, too small": {
			in: Input{Policy: bestFit(1), Workload: Workload{PodSets: []PodSet{pods("main", 1, 8)}}, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("c", queue(gpus("f", 4, 0))), {Name: "b", Unusable: "not connected."}, cluster("a", queue(gpus("f", 16, 0)))}},
			want: Decision{Nominate: []string{"a"},
				Considered: []Verdict{eligible("a", 0.5), passed("b", "not connected."), passed("c", "ClusterQueue cq: nvidia.com/gpu: needs 8, can ever have 4")},
				Message:    "Nominated a (best of 3). Passed over: b: not connected; c: ClusterQueue cq: nvidia.com/gpu: needs 8, can ever have 4."},
		},
		"CEL filter on a label": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce, Filter: must(CompileFilter(`"zone" in cluster.labels && cluster.labels.zone == "eu"`))},
				Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{
					{Name: "a", Labels: map[string]string{"zone": "us"}, Capacity: queue(gpus("f", 8, 0))},
					{Name: "b", Labels: map[string]string{"zone": "eu"}, Capacity: queue(gpus("f", 8, 4))},
					{Name: "c", Capacity: queue(gpus("f", 8, 2))},
				}},
			want: Decision{Nominate: []string{"b"},
				Considered: []Verdict{eligible("b", 0.25), passed("a", "filtered out by the policy's filter"), passed("c", "filtered out by the policy's filter")},
				Message:    "Nominated b (best of 3). Passed over: a: filtered out by the policy's filter; c: filtered out by the policy's filter."},
		},
		"a filter that fails on one cluster (a missing label): that one only is passed over, with an error": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce, Filter: must(CompileFilter(`cluster.labels.zone == "eu"`))},
				Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{
					{Name: "a", Labels: map[string]string{"zone": "eu"}, Capacity: queue(gpus("f", 8, 0))},
					{Name: "b", Capacity: queue(gpus("f", 8, 0))},
				}},
			want: Decision{Nominate: []string{"a"},
				Considered: []Verdict{eligible("a", 0.75), passed("b", "the policy's filter failed: no such key: zone")},
				Errors:     []ClusterError{{Cluster: "b", Err: errors.New("filter: no such key: zone")}},
				Message:    "Nominated a (best of 2). Passed over: b: the policy's filter failed: no such key: zone."},
		},
		"CEL score: by score, highest first, in place of the default": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce, Score: must(CompileScore(`cluster.capacity["nvidia.com/gpu"].usage`))},
				Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0},
			want: Decision{Nominate: []string{"b", "c", "a"}, Considered: []Verdict{eligible("b", 4), eligible("c", 2), eligible("a", 0)},
				Message: "Nominated b, c, a (best 3 of 3)."},
		},
		"CEL score that fails on one cluster: that one is passed over, with an error": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce, Score: must(CompileScore(`double(cluster.labels.weight)`))},
				Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{
					{Name: "a", Labels: map[string]string{"weight": "2.5"}, Capacity: queue(gpus("f", 8, 0))},
					{Name: "b", Capacity: queue(gpus("f", 8, 0))},
				}},
			want: Decision{Nominate: []string{"a"},
				Considered: []Verdict{eligible("a", 2.5), passed("b", "the policy's score failed: no such key: weight")},
				Errors:     []ClusterError{{Cluster: "b", Err: errors.New("score: no such key: weight")}},
				Message:    "Nominated a (best of 2). Passed over: b: the policy's score failed: no such key: weight."},
		},
		"CEL score ties go by name": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce, Score: must(CompileScore(`1`))},
				Workload: twoGPUs, Clusters: []Cluster{cluster("c", Capacity{}), cluster("a", Capacity{}), cluster("b", Capacity{})}, Started: t0, Now: t0},
			want: Decision{Nominate: []string{"a", "b", "c"}, Considered: []Verdict{eligible("a", 1), eligible("b", 1), eligible("c", 1)},
				Message: "Nominated a, b, c (best 3 of 3)."},
		},
		"default score ties go by name, whatever the input order": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("c", queue(gpus("f", 8, 0))), cluster("a", queue(gpus("f", 8, 0))), cluster("b", queue(gpus("f", 8, 0)))}},
			want: Decision{Nominate: []string{"a"}, Considered: []Verdict{eligible("a", 0.75), eligible("b", 0.75), eligible("c", 0.75)},
				NextRound: time.Minute, Message: "Nominated a (best of 3; 2 more eligible in later rounds)."},
		},
		"default ranking: room now, then unknown capacity, then no room now, whatever the score": {
			in: Input{Policy: Policy{Strategy: courier.AllAtOnce}, Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{
					// b has two free GPUs, one per flavor: no room for the pod set now.
					cluster("b", queue(gpus("x", 8, 7), gpus("y", 8, 7))),
					cluster("c", Capacity{}),
					cluster("d", queue(gpus("f", 8, 6))),
				}},
			want: Decision{Nominate: []string{"d", "c"}, Considered: []Verdict{eligible("d", 0), eligible("c", 0), preempts("b", 0)}, HeldBack: 1, NextRound: time.Minute,
				Message: "Nominated d, c (best 2 of 3; 1 more eligible in later rounds). 1 more would have to preempt and wait for the clusters with room first."},
		},
		"gang: a pod set that no one flavor can hold, though the flavors together could": {
			in: Input{Policy: bestFit(1), Workload: Workload{PodSets: []PodSet{pods("main", 8, 1)}}, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("a", queue(gpus("x", 4, 0), gpus("y", 4, 0))), cluster("b", Capacity{})}},
			want: Decision{Nominate: []string{"b"},
				Considered: []Verdict{eligible("b", 0), passed("a", "ClusterQueue cq: nvidia.com/gpu: needs 8, can ever have 4 in one flavor")},
				Message:    "Nominated b (best of 2). Passed over: a: ClusterQueue cq: nvidia.com/gpu: needs 8, can ever have 4 in one flavor."},
		},
		"impossible: every cluster known and too small, even those unusable or filtered out": {
			in: Input{Policy: Policy{Filter: must(CompileFilter(`cluster.name != "c"`))}, Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("a", tooSmall), {Name: "b", Unusable: "not connected", Capacity: tooSmall}, cluster("c", tooSmall)}},
			want: Decision{Impossible: true,
				Considered: []Verdict{
					passed("a", "ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1"),
					passed("b", "not connected"),
					passed("c", "ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1"),
				},
				Message: "No cluster could ever hold the workload. Passed over: a: ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1; " +
					"b: not connected; c: ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1."},
		},
		"not impossible when a cluster big enough is unusable": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("a", tooSmall), {Name: "b", Unusable: "not connected", Capacity: queue(gpus("f", 8, 0))}}},
			want: Decision{
				Considered: []Verdict{passed("a", "ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1"), passed("b", "not connected")},
				Message:    "No cluster is eligible. Passed over: a: ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1; b: not connected."},
		},
		"not impossible when a cluster's capacity is unknown, even if it is unusable": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("a", tooSmall), {Name: "b", Unusable: "not connected"}}},
			want: Decision{
				Considered: []Verdict{passed("a", "ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1"), passed("b", "not connected")},
				Message:    "No cluster is eligible. Passed over: a: ClusterQueue cq: nvidia.com/gpu: needs 2, can ever have 1; b: not connected."},
		},
		"no clusters: nothing, and not impossible": {
			in:   Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0},
			want: Decision{Message: "The policy has no clusters."},
		},
		"maxWaitTime passed: expired, and said first": {
			in: Input{Policy: compiled(courier.DispatchPolicySpec{MaxWaitTime: &metav1.Duration{Duration: 5 * time.Minute}, FanOut: ptr.To[int32](5)}),
				Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(5*time.Minute + time.Second)},
			want: Decision{Nominate: []string{"a", "c", "b"}, Considered: abcRanked, Expired: true,
				Message: "Waited longer than maxWaitTime (5m0s). Nominated a, c, b (best 3 of 3)."},
		},
		"maxWaitTime ahead: the time left is said": {
			in: Input{Policy: compiled(courier.DispatchPolicySpec{MaxWaitTime: &metav1.Duration{Duration: 5 * time.Minute}, Strategy: courier.AllAtOnce}),
				Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(2 * time.Minute)},
			want: Decision{Nominate: []string{"a", "c", "b"}, Considered: abcRanked, ExpiresIn: 3 * time.Minute, Message: "Nominated a, c, b (best 3 of 3)."},
		},
		"maxWaitTime reached exactly: not expired yet": {
			in: Input{Policy: compiled(courier.DispatchPolicySpec{MaxWaitTime: &metav1.Duration{Duration: 5 * time.Minute}, Strategy: courier.AllAtOnce}),
				Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(5 * time.Minute)},
			want: Decision{Nominate: []string{"a", "c", "b"}, Considered: abcRanked, Message: "Nominated a, c, b (best 3 of 3)."},
		},
		"a clock before Started: round 0, the next one a roundTimeout away": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(-time.Hour)},
			want: Decision{Nominate: []string{"a"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a (best of 3; 2 more eligible in later rounds)."},
		},
		"a zero Policy gets the API's defaults": {
			in: Input{Workload: twoGPUs, Clusters: abc(), Started: t0, Now: t0.Add(time.Minute)},
			want: Decision{Nominate: []string{"a", "c"}, Considered: abcRanked, NextRound: time.Minute,
				Message: "Nominated a, c (best 2 of 3; 1 more eligible in later rounds)."},
		},
		"the same name twice: the first stays": {
			in: Input{Policy: bestFit(1), Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{{Name: "a", Unusable: "not connected"}, cluster("a", queue(gpus("f", 8, 0)))}},
			want: Decision{Considered: []Verdict{passed("a", "not connected")},
				Message: "No cluster is eligible. Passed over: a: not connected."},
		},
		"a workload that requests nothing fits everywhere, score 0": {
			in: Input{Policy: bestFit(1), Workload: Workload{PodSets: []PodSet{{Name: "main", Count: 3}}}, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("b", queue()), cluster("a", queue(gpus("f", 8, 8)))}},
			want: Decision{Nominate: []string{"a"}, Considered: []Verdict{eligible("a", 0), eligible("b", 0)}, NextRound: time.Minute,
				Message: "Nominated a (best of 2; 1 more eligible in later rounds)."},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Plan(tc.in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), errorText); diff != "" {
				t.Errorf("Plan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func must(p *Program, err error) *Program {
	if err != nil {
		panic(err)
	}
	return p
}

// TestPlanMessageBounded: many clusters with long names and reasons give a
// message of at most 1024 bytes that ends by counting the rest.
func TestPlanMessageBounded(t *testing.T) {
	var clusters []Cluster
	for i := range 64 {
		name := fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 100))
		c := Cluster{Name: name, Capacity: queue(gpus("f", 8, 0))}
		if i%2 == 1 {
			c.Unusable = strings.Repeat("é", 300) // cut inside a rune if not careful
		}
		clusters = append(clusters, c)
	}
	in := Input{Policy: Policy{Strategy: courier.AllAtOnce, MaxWaitTime: time.Minute}, Workload: twoGPUs, Clusters: clusters,
		Started: t0, Now: t0.Add(time.Hour)}
	got := Plan(in)
	if len(got.Message) > maxMessage {
		t.Errorf("Message is %d bytes, want at most %d", len(got.Message), maxMessage)
	}
	for _, want := range []string{
		"Waited longer than maxWaitTime (1m0s). Nominated 000-nnn",
		" and 29 more (best 32 of 64). Passed over: 001-nnn",
	} {
		if !strings.Contains(got.Message, want) {
			t.Errorf("Message %q does not contain %q", got.Message, want)
		}
	}
	if !strings.HasSuffix(got.Message, "éé…; 003-"+strings.Repeat("n", 100)+": "+strings.Repeat("é", 78)+"… and 30 more.") {
		t.Errorf("Message %q does not clip reasons on a rune boundary", got.Message)
	}
	if again := Plan(in); again.Message != got.Message {
		t.Errorf("Message is not deterministic:\n%s\n%s", got.Message, again.Message)
	}
}

// fullABC are three full clusters of 8 GPUs: for twoGPUs a misses 1,
// b 2 and c 2 (tied, so by name).
func fullABC(gated ...string) []Cluster {
	cs := []Cluster{
		cluster("a", queue(gpus("f", 8, 7))),
		cluster("b", queue(gpus("f", 8, 8))),
		cluster("c", queue(gpus("f", 8, 8))),
	}
	for i := range cs {
		cs[i].PreemptionGates = slices.Contains(gated, cs[i].Name)
	}
	return cs
}

// One cluster preempts at a time, whatever the strategy.
func TestPlanPreemptsOnOneClusterAtATime(t *testing.T) {
	allAtOnce := Policy{Strategy: courier.AllAtOnce}
	cases := map[string]struct {
		in   Input
		want Decision
	}{
		"all at once, no room anywhere: only the cluster that misses least": {
			in: Input{Policy: allAtOnce, Workload: twoGPUs, Clusters: fullABC(), Started: t0, Now: t0},
			want: Decision{Nominate: []string{"a"}, Considered: []Verdict{preempts("a", -0.125), preempts("b", -0.25), preempts("c", -0.25)},
				Preempting: "a", HeldBack: 2,
				Message: "Nominated a (best of 3). a may preempt; 2 more would have to and wait, as one cluster preempts at a time."},
		},
		"fan-out 2, no room anywhere: still one": {
			in: Input{Policy: bestFit(2), Workload: twoGPUs, Clusters: fullABC(), Started: t0, Now: t0},
			want: Decision{Nominate: []string{"a"}, Considered: []Verdict{preempts("a", -0.125), preempts("b", -0.25), preempts("c", -0.25)},
				Preempting: "a", HeldBack: 2,
				Message: "Nominated a (best of 3). a may preempt; 2 more would have to and wait, as one cluster preempts at a time."},
		},
		"all at once, one with room: the full ones wait a round": {
			in: Input{Policy: allAtOnce, Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: append(fullABC(), cluster("d", queue(gpus("f", 8, 0))))},
			want: Decision{Nominate: []string{"d"}, Considered: []Verdict{eligible("d", 0.75), preempts("a", -0.125), preempts("b", -0.25), preempts("c", -0.25)},
				HeldBack: 3, NextRound: time.Minute,
				Message: "Nominated d (best of 4; 1 more eligible in later rounds). 3 more would have to preempt and wait for the clusters with room first."},
		},
		"all at once, one with room, a round later: then one full cluster may preempt": {
			in: Input{Policy: allAtOnce, Workload: twoGPUs, Started: t0, Now: t0.Add(time.Minute), Nominated: []string{"d"},
				Clusters: append(fullABC(), cluster("d", queue(gpus("f", 8, 0))))},
			want: Decision{Nominate: []string{"d", "a"}, Considered: []Verdict{eligible("d", 0.75), preempts("a", -0.125), preempts("b", -0.25), preempts("c", -0.25)},
				Preempting: "a", HeldBack: 2,
				Message: "Nominated d, a (best 2 of 4). a may preempt; 2 more would have to and wait, as one cluster preempts at a time."},
		},
		"all at once, gated clusters: they all get a gated copy, the others wait": {
			in: Input{Policy: allAtOnce, Workload: twoGPUs, Clusters: fullABC("b", "c"), Started: t0, Now: t0},
			want: Decision{Nominate: []string{"b", "c"}, Considered: []Verdict{preempts("a", -0.125), eligible("b", -0.25), eligible("c", -0.25)},
				HeldBack: 1,
				Message:  "Nominated b, c (best 2 of 3). 1 more would have to preempt and wait for the clusters with room first."},
		},
		"nominated before and preempting: no second one, in any round": {
			in: Input{Policy: allAtOnce, Workload: twoGPUs, Clusters: fullABC(), Started: t0, Now: t0.Add(10 * time.Minute), Nominated: []string{"b"}},
			want: Decision{Nominate: []string{"b"}, Considered: []Verdict{preempts("a", -0.125), preempts("b", -0.25), preempts("c", -0.25)},
				Preempting: "b", HeldBack: 2,
				Message: "Nominated b (best of 3). b may preempt; 2 more would have to and wait, as one cluster preempts at a time."},
		},
		"unknown capacity is not taken to preempt": {
			in: Input{Policy: allAtOnce, Workload: twoGPUs, Started: t0, Now: t0,
				Clusters: []Cluster{cluster("a", queue(gpus("f", 8, 8))), cluster("b", Capacity{})}},
			want: Decision{Nominate: []string{"b", "a"}, Considered: []Verdict{eligible("b", 0), preempts("a", -0.25)}, Preempting: "a",
				Message: "Nominated b, a (best 2 of 2). a may preempt."},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Plan(tc.in), cmpopts.EquateEmpty(), errorText); diff != "" {
				t.Errorf("Plan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
