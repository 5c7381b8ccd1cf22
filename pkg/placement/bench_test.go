package placement

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// benchInput is a decision of a realistic size: 10 workers, each with 3
// flavors of 4 resources, and a workload of 3 pod sets.
func benchInput() Input {
	resources := []corev1.ResourceName{cpu, memory, gpu, "example.com/rdma"}
	var clusters []Cluster
	for i := range 10 {
		c := Cluster{
			Name:     fmt.Sprintf("worker-%02d", i),
			Labels:   map[string]string{"zone": []string{"eu", "us"}[i%2], "tier": "gpu"},
			Capacity: Capacity{Known: true, ClusterQueue: "cq"},
		}
		for f := range 3 {
			fl := Flavor{Name: fmt.Sprintf("flavor-%d", f), Resources: map[corev1.ResourceName]Quota{}}
			for j, r := range resources {
				fl.Resources[r] = Quota{Nominal: int64(64+8*j) * 1000 * int64(1+f), Usage: int64(i*f+j) * 1000, Borrowable: 4000}
			}
			c.Capacity.Flavors = append(c.Capacity.Flavors, fl)
		}
		clusters = append(clusters, c)
	}
	per := func(cpus, gpus int64) map[corev1.ResourceName]int64 {
		return map[corev1.ResourceName]int64{cpu: cpus * 1000, memory: cpus * 1000, gpu: gpus * 1000, "example.com/rdma": 1000}
	}
	return Input{
		Policy: Policy{Strategy: courier.BestFit, FanOut: 2, StepSize: 1, RoundTimeout: time.Minute},
		Workload: Workload{
			Namespace: "ns", Queue: "lq", Priority: 100, Labels: map[string]string{"team": "ml"},
			PodSets: []PodSet{
				{Name: "launcher", Count: 1, Requests: per(2, 0)},
				{Name: "workers", Count: 4, Requests: per(8, 2)},
				{Name: "ps", Count: 2, Requests: per(4, 0)},
			},
			Object: map[string]any{"kind": "TrainJob", "spec": map[string]any{"trainer": map[string]any{"numNodes": int64(4)}}},
		},
		Clusters:  clusters,
		Started:   t0,
		Now:       t0.Add(90 * time.Second),
		Nominated: []string{"worker-03"},
	}
}

func BenchmarkPlan(b *testing.B) {
	withCEL := benchInput()
	withCEL.Policy.Filter = must(CompileFilter(`cluster.labels.zone == "eu" || workload.priority > 50`))
	withCEL.Policy.Score = must(CompileScore(
		`cluster.capacity["nvidia.com/gpu"].free - workload.requests["nvidia.com/gpu"] + (object.spec.trainer.numNodes > 2 ? 1.0 : 0.0)`))
	for name, in := range map[string]Input{"default": benchInput(), "cel": withCEL} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := Plan(in)
				if len(d.Nominate) == 0 || len(d.Errors) > 0 {
					b.Fatalf("unexpected decision: %+v", d)
				}
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	spec := courier.DispatchPolicySpec{Filter: `cluster.labels.zone == "eu"`, Score: `cluster.capacity["nvidia.com/gpu"].free`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(spec); err != nil {
			b.Fatal(err)
		}
	}
}
