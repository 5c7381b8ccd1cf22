package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		compile func(string) (*Program, error)
		expr    string
		wantErr string
	}{
		"filter: syntax error, in CEL's words": {
			compile: CompileFilter, expr: "cluster.name ==",
			wantErr: "filter: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting",
		},
		"filter: not a bool": {
			compile: CompileFilter, expr: "1 + 2",
			wantErr: "filter: gives int, want bool",
		},
		"filter: a string": {
			compile: CompileFilter, expr: "'eu'",
			wantErr: "filter: gives string, want bool",
		},
		"filter: unknown variable": {
			compile: CompileFilter, expr: "node.name == 'a'",
			wantErr: "filter: ERROR: <input>:1:1: undeclared reference to 'node' (in container '')\n | node.name == 'a'\n | ^",
		},
		"filter: a map where a number goes": {
			compile: CompileFilter, expr: "cluster + 1 > 0",
			wantErr: "filter: ERROR: <input>:1:9: found no matching overload for '_+_' applied to '(map(string, dyn), int)'",
		},
		"filter: longer than the CRD allows": {
			compile: CompileFilter, expr: "true" + strings.Repeat(" && true", 512),
			wantErr: "filter: ERROR: <input>:-1:0: expression code point size exceeds limit: size: 4100, limit 4096",
		},
		"score: not a number": {
			compile: CompileScore, expr: "cluster.name == 'a'",
			wantErr: "score: gives bool, want int, uint or double",
		},
		"score: unknown variable": {
			compile: CompileScore, expr: "weight * 2",
			wantErr: "score: ERROR: <input>:1:1: undeclared reference to 'weight' (in container '')",
		},
		"score: syntax error": {
			compile: CompileScore, expr: "1 +",
			wantErr: "score: ERROR: <input>:1:4: Syntax error:",
		},
		"filter: a misspelt field of cluster": {
			compile: CompileFilter, expr: "cluster.lables.gpu == 'a100'",
			wantErr: `filter: cluster has no field "lables"; it has capacity, labels, name`,
		},
		"score: a misspelt field of workload, in has()": {
			compile: CompileScore, expr: "has(workload.priorty) ? 1 : 0",
			wantErr: `score: workload has no field "priorty"; it has labels, namespace, podSets, priority, queue, requests`,
		},
		"filter: a bool":                        {compile: CompileFilter, expr: "cluster.name == 'a' && workload.priority > 0"},
		"filter: dyn, checked when it runs":     {compile: CompileFilter, expr: "cluster.labels.fast"},
		"score: an int":                         {compile: CompileScore, expr: "workload.priority + 1"},
		"score: a uint":                         {compile: CompileScore, expr: "1u"},
		"score: a double":                       {compile: CompileScore, expr: "cluster.capacity['cpu'].free / 2.0"},
		"filter: the job's own fields are free": {compile: CompileFilter, expr: "has(object.spec.anything) && workload.podSets.all(p, p.count > 0)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := tc.compile(tc.expr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("compile: %v", err)
				}
				if p.Expression != tc.expr {
					t.Errorf("Expression = %q, want %q", p.Expression, tc.expr)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one starting with %q", err, tc.wantErr)
			}
		})
	}
}

// celCluster has two flavors, so that capacity shows sums.
var celCluster = Cluster{
	Name:   "a",
	Labels: map[string]string{"zone": "eu"},
	Capacity: Capacity{Known: true, ClusterQueue: "cq", Flavors: []Flavor{
		{Name: "x", Resources: map[corev1.ResourceName]Quota{
			gpu:                {Nominal: 4000, Borrowable: 2000, Usage: 1000, Pending: 500},
			corev1.ResourceCPU: {Nominal: 500},
		}},
		{Name: "y", Resources: map[corev1.ResourceName]Quota{gpu: {Nominal: 4000, Usage: 4000}}},
	}},
}

var celWorkload = Workload{
	Namespace: "ns", Queue: "lq", Priority: 7, Labels: map[string]string{"team": "ml"},
	PodSets: []PodSet{
		{Name: "launcher", Count: 1, Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: 500}},
		{Name: "workers", Count: 4, Requests: map[corev1.ResourceName]int64{gpu: 2000, corev1.ResourceCPU: 1000}},
	},
	Object: map[string]any{"kind": "TrainJob", "spec": map[string]any{"trainer": map[string]any{"numNodes": int64(4)}}},
}

func TestFilterEval(t *testing.T) {
	cases := map[string]struct {
		expr    string
		c       Cluster
		w       Workload
		want    bool
		wantErr string
	}{
		"name and labels":                         {expr: `cluster.name == "a" && cluster.labels.zone == "eu"`, c: celCluster, want: true},
		"capacity: summed over flavors, in units": {expr: `cluster.capacity["nvidia.com/gpu"] == {"nominal": 8.0, "borrowable": 2.0, "usage": 5.0, "pending": 0.5, "free": 4.5}`, c: celCluster, want: true},
		"capacity: a resource of one flavor only": {expr: `cluster.capacity.cpu.free == 0.5`, c: celCluster, want: true},
		"unknown capacity: an empty map":          {expr: `size(cluster.capacity) == 0`, c: Cluster{Name: "u", Capacity: Capacity{ClusterQueue: "cq", Flavors: celCluster.Capacity.Flavors}}, want: true},
		"no labels: an empty map":                 {expr: `!("zone" in cluster.labels)`, c: Cluster{Name: "b"}, want: true},
		"workload's fields":                       {expr: `workload.namespace == "ns" && workload.queue == "lq" && workload.priority == 7 && workload.labels.team == "ml"`, w: celWorkload, want: true},
		"pod sets: name, count, one pod's requests": {
			expr: `workload.podSets.map(p, p.name) == ["launcher", "workers"] && workload.podSets[1].count == 4 && workload.podSets[1].requests["nvidia.com/gpu"] == 2.0`,
			w:    celWorkload, want: true,
		},
		"requests: the whole workload's": {expr: `workload.requests == {"cpu": 4.5, "nvidia.com/gpu": 8.0}`, w: celWorkload, want: true},
		"object: the job":                {expr: `object.kind == "TrainJob" && object.spec.trainer.numNodes == 4`, w: celWorkload, want: true},
		"no object: an empty map":        {expr: `!has(object.spec)`, want: true},
		"a missing label key: an error":  {expr: `cluster.labels.gpu == "a100"`, c: celCluster, wantErr: "no such key: gpu"},
		"dyn that is not a bool":         {expr: `cluster.labels.zone`, c: celCluster, wantErr: "gave string, want bool"},
		"content CEL cannot read: an error, no panic": {
			expr: `object.spec.x == 1`, w: Workload{Object: map[string]any{"spec": map[string]any{"x": make(chan int)}}},
			wantErr: "unsupported conversion to ref.Val",
		},
		"over the cost limit": {
			expr:    `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, true))))))`,
			wantErr: "operation cancelled: actual cost limit exceeded",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := CompileFilter(tc.expr)
			if err != nil {
				t.Fatalf("CompileFilter: %v", err)
			}
			got, err := p.Filter(tc.c, tc.w)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want one starting with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Filter: %v", err)
			}
			if got != tc.want {
				t.Errorf("Filter() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScoreEval(t *testing.T) {
	cases := map[string]struct {
		expr    string
		want    float64
		wantErr string
	}{
		"int":                    {expr: `workload.priority * 2`, want: 14},
		"uint":                   {expr: `uint(workload.priority)`, want: 7},
		"double":                 {expr: `cluster.capacity["nvidia.com/gpu"].free - workload.requests["nvidia.com/gpu"]`, want: -3.5},
		"dyn holding a number":   {expr: `workload.podSets[1].requests.cpu`, want: 1},
		"dyn holding a string":   {expr: `cluster.name`, wantErr: "gave string, want int, uint or double"},
		"NaN":                    {expr: `0.0 / 0.0`, wantErr: "gave NaN"},
		"an error of evaluation": {expr: `1 / (workload.priority - 7)`, wantErr: "division by zero"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := CompileScore(tc.expr)
			if err != nil {
				t.Fatalf("CompileScore: %v", err)
			}
			got, err := p.Score(celCluster, celWorkload)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Score: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Score() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgramNotCompiled(t *testing.T) {
	for name, p := range map[string]*Program{"nil": nil, "zero": {Expression: "true"}} {
		if _, err := p.Filter(Cluster{}, Workload{}); err == nil || err.Error() != "not compiled" {
			t.Errorf("%s: Filter error = %v, want not compiled", name, err)
		}
	}
}
