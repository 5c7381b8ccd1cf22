package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrintReport(t *testing.T) {
	job := JobRef{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: "ns", Name: "tj"}
	status := &StatusReport{
		Job: job, Workload: "trainjob-tj", WorkloadState: "QuotaReserved",
		Location: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
		Check:    &CheckStatus{Name: "courier", State: "Ready", Message: "Dispatched to worker w1."},
		Worker:   &WorkerStatus{Cluster: "w1", Found: true, Active: "True", Reason: "Connected"},
		JobState: "Created", JobMessage: "JobSetCreated: the JobSet\nis created",
		Events: []Event{
			{Cluster: "manager", Object: "Workload/trainjob-tj", Type: "Normal", Reason: "Dispatched", Message: "Dispatched\nto w1.", Last: metav1.NewTime(now.Add(-90 * time.Second))},
		},
		Notes: []string{"the identity used on manager may not list events in ns"},
	}
	cases := map[string]struct {
		report report
		format string
		want   string
	}{
		"status as a table": {
			report: status, format: outputTable,
			want: `JOB:         trainjob/tj (ns)
WORKLOAD:    trainjob-tj  QuotaReserved
WHERE:       Placed on w1.
CHECK:       courier  Ready - Dispatched to worker w1.
WORKER:      w1       Active (Connected)
JOB STATUS:  Created - JobSetCreated: the JobSet is created
NOTE:        the identity used on manager may not list events in ns

CLUSTER  OBJECT                TYPE    REASON      AGE  MESSAGE
manager  Workload/trainjob-tj  Normal  Dispatched  90s  Dispatched to w1.
`,
		},
		"status on a worker being lost": {
			report: &StatusReport{Job: job, Location: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
				Worker: &WorkerStatus{Cluster: "w1", Found: true, Active: "False", Reason: "Unreachable", Message: "dial tcp: i/o timeout", Draining: true}},
			format: outputTable,
			want:   "JOB:     trainjob/tj (ns)\nWHERE:   Placed on w1.\nWORKER:  w1  not Active, draining (Unreachable) - dial tcp: i/o timeout\n\nNo events.\n",
		},
		"status without a Workload": {
			report: &StatusReport{Job: job, Location: Location{Summary: "No Workload yet."}}, format: outputTable,
			want: "JOB:    trainjob/tj (ns)\nWHERE:  No Workload yet.\n\nNo events.\n",
		},
		"clusters as a table": {
			report: &ClustersReport{Clusters: []ClusterSummary{
				{Name: "w1", Active: "True", Reason: "Connected", Capacity: "cpu 3/8", Jobs: JobCounts{Placed: 2, Waiting: 1}},
				{Name: "w2", Active: "False", Reason: "Unreachable", Draining: true},
			}},
			format: outputTable,
			want: `NAME  ACTIVE  REASON       DRAINING  PLACED  WAITING  CAPACITY
w1    True    Connected    no        2       1        cpu 3/8
w2    False   Unreachable  yes       0       0        -
`,
		},
		"clusters as JSON": {
			report: &ClustersReport{Clusters: []ClusterSummary{{Name: "w1", Active: "True", Jobs: JobCounts{Placed: 2}}}},
			format: outputJSON,
			want: `{
  "clusters": [
    {
      "name": "w1",
      "active": "True",
      "jobs": {
        "placed": 2,
        "waiting": 0
      }
    }
  ]
}
`,
		},
		"explain as a table": {
			report: &ExplainReport{
				Job: job, Workload: "trainjob-tj", Check: &CheckStatus{Name: "courier", State: "Pending"},
				Why:    "No worker has room for the job now; it waits until one does (eligible: w1).",
				Policy: &PolicySummary{Name: "p", Strategy: "BestFit", Filter: "cluster.name\n!= \"w3\"", Clusters: []string{"w1", "w2", "w3"}},
				Workers: []WorkerVerdict{
					{Name: "w1", Eligible: true, Nominated: true, Reason: "no room now: cpu: needs 1, has free 0"},
					{Name: "w2", Reason: "not Active (Unreachable)"},
				},
			},
			format: outputTable,
			want: `JOB:       trainjob/tj (ns)
WORKLOAD:  trainjob-tj
CHECK:     courier  Pending
WHY:       No worker has room for the job now; it waits until one does (eligible: w1).
POLICY:    p  strategy BestFit  clusters w1,w2,w3
FILTER:    cluster.name != "w3"

WORKER  ELIGIBLE  ROOM NOW  NOMINATED  REASON
w1      yes       no        yes        no room now: cpu: needs 1, has free 0
w2      no        -         no         not Active (Unreachable)
`,
		},
		"explain as YAML": {
			report: &ExplainReport{Job: job, Why: "Kueue has not made a Workload for the job."},
			format: outputYAML,
			want: `job:
  apiVersion: trainer.kubeflow.org/v1alpha1
  kind: TrainJob
  name: tj
  namespace: ns
location:
  summary: ""
why: Kueue has not made a Workload for the job.
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printReport(&out, tc.format, tc.report, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckOutput(t *testing.T) {
	for _, ok := range []string{"table", "json", "yaml"} {
		if err := checkOutput(ok); err != nil {
			t.Errorf("checkOutput(%q) = %v, want nil", ok, err)
		}
	}
	err := checkOutput("wide")
	if diff := cmp.Diff(`--output "wide" is not a format kubectl courier prints; use table, json or yaml`, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
