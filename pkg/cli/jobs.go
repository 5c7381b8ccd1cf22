package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// JobsReport is what kubectl courier status shows without a job: every
// job whose Workload carries a Courier admission check, in the namespace
// or, with -A, in all.
type JobsReport struct {
	metav1.TypeMeta `json:",inline"`
	Jobs            []JobSummary `json:"jobs"`
}

// JobSummary is one job in a JobsReport.
type JobSummary struct {
	Job           JobRef      `json:"job"`
	Workload      string      `json:"workload"`
	WorkloadState string      `json:"workloadState"`
	Check         CheckStatus `json:"check"`
	Location      Location    `json:"location"`
	// Created is when Kueue made the Workload.
	Created metav1.Time `json:"created"`
}

func gatherJobs(ctx context.Context, c *clients, allNamespaces bool) (*JobsReport, error) {
	checks := &kueue.AdmissionCheckList{}
	if err := c.manager.List(ctx, checks); err != nil {
		return nil, fmt.Errorf("listing AdmissionChecks: %w", err)
	}
	workloads := &kueue.WorkloadList{}
	var opts []client.ListOption
	where := "all namespaces"
	if !allNamespaces {
		opts, where = append(opts, client.InNamespace(c.namespace)), c.namespace
	}
	if err := c.manager.List(ctx, workloads, opts...); err != nil {
		return nil, fmt.Errorf("listing Workloads in %s: %w", where, err)
	}
	return summarizeJobs(workloads.Items, checks.Items), nil
}

// summarizeJobs sums up the Workloads with a Courier check, by namespace
// and job.
func summarizeJobs(workloads []kueue.Workload, checks []kueue.AdmissionCheck) *JobsReport {
	r := &JobsReport{Jobs: []JobSummary{}}
	for i := range workloads {
		wl := &workloads[i]
		check := findCheck(wl, checks)
		if check == nil {
			continue
		}
		state, _ := workloadState(wl)
		r.Jobs = append(r.Jobs, JobSummary{
			Job: jobOf(wl), Workload: wl.Name, WorkloadState: state, Check: *check, Location: locate(wl), Created: wl.CreationTimestamp,
		})
	}
	slices.SortFunc(r.Jobs, func(a, b JobSummary) int {
		return cmp.Or(cmp.Compare(a.Job.Namespace, b.Job.Namespace), cmp.Compare(a.Job.Name, b.Job.Name), cmp.Compare(a.Workload, b.Workload))
	})
	return r
}

// jobOf is the job that controls a Workload; a Workload made by hand is
// its own job.
func jobOf(wl *kueue.Workload) JobRef {
	if ref := metav1.GetControllerOf(wl); ref != nil {
		return JobRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: wl.Namespace, Name: ref.Name}
	}
	return JobRef{APIVersion: kueue.SchemeGroupVersion.String(), Kind: "Workload", Namespace: wl.Namespace, Name: wl.Name}
}
