package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrint(t *testing.T) {
	job := JobRef{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: "ns", Name: "tj"}
	status := &StatusReport{
		Job: job, Workload: "trainjob-tj", WorkloadState: "QuotaReserved",
		Location: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
		Check:    &CheckStatus{Name: "courier", State: "Ready", Message: "Dispatched to worker w1."},
		Worker:   &WorkerStatus{Cluster: "w1", Found: true, Active: "True", Reason: "Connected"},
		JobState: "Created", JobMessage: "JobSetCreated: the JobSet\nis created",
		Events: []Event{
			{Object: "Workload/trainjob-tj", Type: "Normal", Reason: "Dispatched", Message: "Dispatched\nto w1.", Count: 2, Last: metav1.NewTime(now.Add(-90 * time.Second))},
		},
		Notes: []string{"the identity used on manager may not list events in ns"},
	}
	clusters := &ClustersReport{Clusters: []ClusterSummary{
		{Name: "w1", Active: "True", Reason: "Connected", Capacity: "cpu 3/8", KubernetesVersion: "v1.36.3", Jobs: JobCounts{Placed: 2, Waiting: 1}},
		{Name: "w2", Active: "False", Reason: "Unreachable", Message: "dial tcp:\ntimeout", Draining: true, UnavailableKinds: []string{"Job.v1.batch"}},
	}}
	explain := &ExplainReport{
		Job: job, Workload: "trainjob-tj", Check: &CheckStatus{Name: "courier", State: "Pending"},
		Why:    "No worker has room for the job now; it waits until one does (eligible: w1).",
		Policy: &PolicySummary{Name: "p", Strategy: "BestFit", Filter: "cluster.name\n!= \"w3\"", Clusters: []string{"w1", "w2", "w3"}},
		Workers: []WorkerVerdict{
			{Name: "w1", Eligible: true, Nominated: true, Reason: "no room now: cpu: needs 1, has free 0", Capacity: "cpu 1/1"},
			{Name: "w2", Reason: "not Active (Unreachable)"},
		},
	}
	jobs := &JobsReport{Jobs: []JobSummary{
		{Job: job, Workload: "trainjob-tj", WorkloadState: "Admitted", Check: CheckStatus{Name: "courier", State: "Ready", Message: "Dispatched to worker w1."},
			Location: Location{Cluster: "w1", Live: true}, Created: metav1.NewTime(now.Add(-time.Hour))},
		{Job: JobRef{APIVersion: "batch/v1", Kind: "Job", Namespace: "other", Name: "j"}, Workload: "job-j", WorkloadState: "QuotaReserved",
			Check: CheckStatus{Name: "courier", State: "Pending", Message: "Nominated w1, w2."}, Location: Location{Nominated: []string{"w1", "w2"}}, Created: metav1.NewTime(now.Add(-2 * time.Minute))},
	}}
	cases := map[string]struct {
		report report
		out    output
		want   string
	}{
		"status for people": {
			report: status,
			want: `JOB:         trainjob/tj (ns)
WORKLOAD:    trainjob-tj  QuotaReserved
WHERE:       Placed on w1.
CHECK:       courier  Ready - Dispatched to worker w1.
WORKER:      w1       Active (Connected)
JOB STATUS:  Created - JobSetCreated: the JobSet is created
NOTE:        the identity used on manager may not list events in ns

OBJECT                 TYPE     REASON       AGE   MESSAGE
Workload/trainjob-tj   Normal   Dispatched   90s   Dispatched to w1.
`,
		},
		"status wide, without headers": {
			report: status, out: output{format: "wide", noHeaders: true},
			want: `JOB:         trainjob/tj (ns)
WORKLOAD:    trainjob-tj  QuotaReserved
WHERE:       Placed on w1.
CHECK:       courier  Ready - Dispatched to worker w1.
WORKER:      w1       Active (Connected)
JOB STATUS:  Created - JobSetCreated: the JobSet is created
NOTE:        the identity used on manager may not list events in ns

Workload/trainjob-tj   Normal   Dispatched   90s   Dispatched to w1.   2
`,
		},
		"status on a worker being lost": {
			report: &StatusReport{Job: job, Location: Location{Cluster: "w1", Live: true, Summary: "Placed on w1."},
				Worker: &WorkerStatus{Cluster: "w1", Found: true, Active: "False", Reason: "Unreachable", Message: "dial tcp: i/o timeout", Draining: true}},
			want: "JOB:     trainjob/tj (ns)\nWHERE:   Placed on w1.\nWORKER:  w1  not Active, draining (Unreachable) - dial tcp: i/o timeout\n\nNo events.\n",
		},
		"status names its job": {
			report: status, out: output{format: "name"},
			want: "trainjob.trainer.kubeflow.org/tj\n",
		},
		"clusters for people": {
			report: clusters,
			want: `NAME   ACTIVE   REASON        DRAINING   PLACED   WAITING   CAPACITY
w1     True     Connected     no         2        1         cpu 3/8
w2     False    Unreachable   yes        0        0         -
`,
		},
		"clusters wide": {
			report: clusters, out: output{format: "wide"},
			want: `NAME   ACTIVE   REASON        DRAINING   PLACED   WAITING   CAPACITY   KUBERNETES   UNAVAILABLE    MESSAGE
w1     True     Connected     no         2        1         cpu 3/8    v1.36.3      -              -
w2     False    Unreachable   yes        0        0         -          -            Job.v1.batch   dial tcp: timeout
`,
		},
		"clusters by name": {
			report: clusters, out: output{format: "name"},
			want: "workercluster.courier.dev/w1\nworkercluster.courier.dev/w2\n",
		},
		"clusters through a jsonpath": {
			report: clusters, out: output{format: `jsonpath={range .clusters[*]}{.name}={.active}{"\n"}{end}`},
			want: "w1=True\nw2=False\n",
		},
		"no clusters": {
			report: &ClustersReport{}, want: "No WorkerClusters.\n",
		},
		"clusters as JSON, with their kind": {
			report: &ClustersReport{Clusters: []ClusterSummary{{Name: "w1", Active: "True", Jobs: JobCounts{Placed: 2}}}},
			out:    output{format: "json"},
			want: `{
    "kind": "ClustersReport",
    "apiVersion": "kubectl.courier.dev/v1alpha1",
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
		"explain for people": {
			report: explain,
			want: `JOB:       trainjob/tj (ns)
WORKLOAD:  trainjob-tj
CHECK:     courier  Pending
WHY:       No worker has room for the job now; it waits until one does (eligible: w1).
POLICY:    p  strategy BestFit  clusters w1,w2,w3
FILTER:    cluster.name != "w3"

WORKER   ELIGIBLE   ROOM NOW   NOMINATED   REASON
w1       yes        no         yes         no room now: cpu: needs 1, has free 0
w2       no         -          no          not Active (Unreachable)
`,
		},
		"explain wide shows capacity": {
			report: &ExplainReport{Job: job, Why: "Waiting.", Workers: explain.Workers}, out: output{format: "wide"},
			want: `JOB:  trainjob/tj (ns)
WHY:  Waiting.

WORKER   ELIGIBLE   ROOM NOW   NOMINATED   REASON                                  CAPACITY
w1       yes        no         yes         no room now: cpu: needs 1, has free 0   cpu 1/1
w2       no         -          no          not Active (Unreachable)                -
`,
		},
		"explain as YAML": {
			report: &ExplainReport{Job: job, Why: "Kueue has not made a Workload for the job."}, out: output{format: "yaml"},
			want: `apiVersion: kubectl.courier.dev/v1alpha1
job:
  apiVersion: trainer.kubeflow.org/v1alpha1
  kind: TrainJob
  name: tj
  namespace: ns
kind: ExplainReport
location:
  summary: ""
why: Kueue has not made a Workload for the job.
`,
		},
		"jobs in a namespace": {
			report: jobs,
			want: `JOB           WORKLOAD      STATE           CHECK     WHERE     AGE
trainjob/tj   trainjob-tj   Admitted        Ready     w1        60m
job/j         job-j         QuotaReserved   Pending   waiting   2m
`,
		},
		"jobs in every namespace, wide": {
			report: jobs, out: output{format: "wide", allNamespaces: true},
			want: `NAMESPACE   JOB           WORKLOAD      STATE           CHECK     WHERE     AGE   NOMINATED   MESSAGE
ns          trainjob/tj   trainjob-tj   Admitted        Ready     w1        60m   -           Dispatched to worker w1.
other       job/j         job-j         QuotaReserved   Pending   waiting   2m    w1,w2       Nominated w1, w2.
`,
		},
		"jobs by name": {
			report: jobs, out: output{format: "name"},
			want: "trainjob.trainer.kubeflow.org/tj\njob.batch/j\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			tc.out.now = now
			if err := tc.out.check(); err != nil {
				t.Fatal(err)
			}
			if err := tc.out.print(&out, tc.report); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutputCheck(t *testing.T) {
	for _, ok := range []string{"", "wide", "name", "json", "yaml", "jsonpath={.kind}", "go-template={{.kind}}"} {
		if err := (&output{format: ok}).check(); err != nil {
			t.Errorf("check(%q) = %v, want nil", ok, err)
		}
	}
	cases := map[string]struct{ format, want string }{
		"an unknown format": {
			format: "table",
			want:   `--output "table" is not a format kubectl courier prints; use one of wide, json, yaml, `,
		},
		"a template that does not parse": {
			format: "jsonpath={.kind",
			want:   `--output "jsonpath={.kind": error parsing jsonpath {.kind, unclosed action`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := (&output{format: tc.format}).check()
			if err == nil {
				t.Fatalf("check(%q) succeeded", tc.format)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to start with %q", err, tc.want)
			}
		})
	}
}

func TestNameNeedsAnObject(t *testing.T) {
	err := (&output{format: "name"}).print(&bytes.Buffer{}, &VersionReport{})
	if err == nil || err.Error() != "-o name: this command names no object; use -o json or yaml" {
		t.Errorf("print(-o name, version) = %v", err)
	}
}
