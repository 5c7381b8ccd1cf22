package placement

import (
	"maps"
	"slices"
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
		"filter: a cluster where a number goes": {
			compile: CompileFilter, expr: "cluster + 1 > 0",
			wantErr: "filter: ERROR: <input>:1:9: found no matching overload for '_+_' applied to '(courier.Cluster, int)'",
		},
		"filter: a label's value is a string": {
			compile: CompileFilter, expr: "cluster.labels.fast",
			wantErr: "filter: gives string, want bool",
		},
		"filter: a misspelt field of a pod set": {
			compile: CompileFilter, expr: "workload.podSets.all(p, p.cuont > 0)",
			wantErr: "filter: ERROR: <input>:1:26: undefined field 'cuont'",
		},
		"score: a misspelt field of a resource's capacity": {
			compile: CompileScore, expr: "cluster.capacity.cpu.fre",
			wantErr: "score: ERROR: <input>:1:21: undefined field 'fre'",
		},
		"filter: a cluster made in the expression": {
			compile: CompileFilter, expr: `cluster == courier.Cluster{name: "a"}`,
			wantErr: "filter: courier.Cluster cannot be made in an expression",
		},
		"filter: a string function of a later version than Kubernetes offers": {
			compile: CompileFilter, expr: "cluster.name.reverse() == 'a'",
			wantErr: "filter: ERROR: <input>:1:21: found no matching overload for 'reverse'",
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
		"filter: dyn, checked when it runs":     {compile: CompileFilter, expr: "object.spec.fast"},
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
	Labels: map[string]string{"zone": "eu", "example.com/cost": "2.5"},
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
		"name and labels": {expr: `cluster.name == "a" && cluster.labels.zone == "eu"`, c: celCluster, want: true},
		"capacity: summed over flavors, in units": {
			expr: `cluster.capacity["nvidia.com/gpu"].nominal == 8.0 && cluster.capacity["nvidia.com/gpu"].borrowable == 2.0 && cluster.capacity["nvidia.com/gpu"].usage == 5.0 && cluster.capacity["nvidia.com/gpu"].pending == 0.5 && cluster.capacity["nvidia.com/gpu"].free == 4.5`,
			c:    celCluster, want: true,
		},
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
		"dyn that is not a bool":         {expr: `object.kind`, w: celWorkload, wantErr: "gave string, want bool"},
		"the strings, lists and sets extensions": {
			expr: `cluster.labels.zone.upperAscii() == "EU" && workload.podSets.map(p, p.name).reverse() == ["workers", "launcher"] && lists.range(2) == [0, 1] && sets.contains(["eu", "us"], [cluster.labels.zone])`,
			c:    celCluster, w: celWorkload, want: true,
		},
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
		"a pod's request":        {expr: `workload.podSets[1].requests.cpu`, want: 1},
		"a label read by index":  {expr: `double(cluster.labels["example.com/cost"])`, want: 2.5},
		"dyn holding a number":   {expr: `object.spec.trainer.numNodes`, want: 4},
		"dyn holding a string":   {expr: `object.kind`, wantErr: "gave string, want int, uint or double"},
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

// TestObjectTypesMatchVars keeps the declared types and the maps the
// interpreter reads in step: a field declared but not filled would compile
// and then fail on every cluster.
func TestObjectTypesMatchVars(t *testing.T) {
	v := newVars(celCluster, newWorkloadVars(celWorkload, newGang(celWorkload).total))
	capacity := v.cluster["capacity"].(map[string]any)
	podSets := v.workload.workload["podSets"].([]any)
	values := map[string]map[string]any{
		typeCluster:  v.cluster,
		typeQuota:    capacity[string(corev1.ResourceCPU)].(map[string]any),
		typeWorkload: v.workload.workload,
		typePodSet:   podSets[0].(map[string]any),
	}
	for typeName := range objectTypes {
		want, _ := fieldNames(typeName)
		got := slices.Sorted(maps.Keys(values[typeName]))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: fields (-declared +filled):\n%s", typeName, diff)
		}
	}
}
