package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// defaultResource is the kind of a job named without one.
const defaultResource = "trainjobs.trainer.kubeflow.org"

// JobRef names a job on the manager.
type JobRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

func (j JobRef) String() string {
	return fmt.Sprintf("%s/%s (%s)", strings.ToLower(j.Kind), j.Name, j.Namespace)
}

// parseTarget splits a job argument into its resource, default a
// TrainJob, and its name: "NAME", "TYPE/NAME", as kubectl takes them.
func parseTarget(arg string) (resource, name string, err error) {
	resource, name, found := strings.Cut(arg, "/")
	if !found {
		resource, name = defaultResource, arg
	}
	if resource == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not a job: name it as NAME (a TrainJob) or TYPE/NAME, e.g. trainjob/NAME or job.batch/NAME", arg)
	}
	return resource, name, nil
}

// target is a job on the manager and the Workload Kueue made for it.
type target struct {
	ref JobRef
	job *unstructured.Unstructured
	// workload is nil when Kueue has made none yet.
	workload *kueue.Workload
}

// findTarget reads the job an argument names and its Workload.
func findTarget(ctx context.Context, c *clients, arg string) (*target, error) {
	resource, name, err := parseTarget(arg)
	if err != nil {
		return nil, err
	}
	full, gr := schema.ParseResourceArg(resource)
	var gvk schema.GroupVersionKind
	if full != nil {
		gvk, err = c.mapper.KindFor(*full)
	}
	if full == nil || err != nil {
		gvk, err = c.mapper.KindFor(gr.WithVersion(""))
	}
	if err != nil {
		return nil, fmt.Errorf("the manager serves no resource %q; name the job as TYPE/NAME, e.g. trainjob/NAME or job.batch/NAME: %w", resource, err)
	}
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(gvk)
	key := client.ObjectKey{Namespace: c.namespace, Name: name}
	if err := c.manager.Get(ctx, key, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s %s not found in namespace %s; pick the namespace with -n", gvk.Kind, name, c.namespace)
		}
		return nil, fmt.Errorf("getting %s %s/%s: %w", gvk.Kind, c.namespace, name, err)
	}
	t := &target{
		ref: JobRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: c.namespace, Name: name},
		job: job,
	}
	list := &kueue.WorkloadList{}
	if err := c.manager.List(ctx, list, client.InNamespace(c.namespace)); err != nil {
		return nil, fmt.Errorf("listing Workloads in %s: %w", c.namespace, err)
	}
	t.workload = workloadOf(list.Items, job)
	return t, nil
}

// workloadOf picks the Workload a job controls: the newest, should an old
// one still be going.
func workloadOf(workloads []kueue.Workload, job metav1.Object) *kueue.Workload {
	var owned []*kueue.Workload
	for i := range workloads {
		if ref := metav1.GetControllerOf(&workloads[i]); ref != nil && ref.UID == job.GetUID() {
			owned = append(owned, &workloads[i])
		}
	}
	if len(owned) == 0 {
		return nil
	}
	return slices.MaxFunc(owned, func(a, b *kueue.Workload) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
}

// CheckStatus is Courier's admission check on a Workload.
type CheckStatus struct {
	Name               string      `json:"name"`
	State              string      `json:"state"`
	Message            string      `json:"message,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitzero"`
	// Policy is the DispatchPolicy the AdmissionCheck names.
	Policy string `json:"policy,omitempty"`
}

// courierCheck finds Courier's check on a Workload: the first whose
// AdmissionCheck is Courier's. It returns nil, and no error, when the
// Workload carries none.
func courierCheck(ctx context.Context, c client.Client, wl *kueue.Workload) (*CheckStatus, error) {
	list := &kueue.AdmissionCheckList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing AdmissionChecks: %w", err)
	}
	return findCheck(wl, list.Items), nil
}

// findCheck is courierCheck over listed AdmissionChecks.
func findCheck(wl *kueue.Workload, checks []kueue.AdmissionCheck) *CheckStatus {
	ours := map[kueue.AdmissionCheckReference]*kueue.AdmissionCheck{}
	for i := range checks {
		if checks[i].Spec.ControllerName == courier.ControllerName {
			ours[kueue.AdmissionCheckReference(checks[i].Name)] = &checks[i]
		}
	}
	for _, s := range wl.Status.AdmissionChecks {
		ac, ok := ours[s.Name]
		if !ok {
			continue
		}
		cs := &CheckStatus{Name: string(s.Name), State: string(s.State), Message: s.Message, LastTransitionTime: s.LastTransitionTime}
		if p := ac.Spec.Parameters; p != nil && p.APIGroup == courier.GroupVersion.Group && p.Kind == "DispatchPolicy" {
			cs.Policy = p.Name
		}
		return cs
	}
	return nil
}

// workloadState sums up a Workload's conditions in a word, with the
// message of the condition that decides it: Finished, Evicted, Admitted,
// QuotaReserved or Pending.
func workloadState(wl *kueue.Workload) (string, string) {
	for _, t := range []string{kueue.WorkloadFinished, kueue.WorkloadEvicted, kueue.WorkloadAdmitted, kueue.WorkloadQuotaReserved} {
		if c := meta.FindStatusCondition(wl.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return t, c.Message
		}
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil {
		return "Pending", c.Message
	}
	return "Pending", ""
}
