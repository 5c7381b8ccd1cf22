package dispatch

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
)

var workloadGVK = kueue.SchemeGroupVersion.WithKind("Workload")

// courierCheck finds Courier's admission check on a Workload and the
// AdmissionCheck object behind it.
func (r *Reconciler) courierCheck(ctx context.Context, wl *kueue.Workload) (*kueue.AdmissionCheck, error) {
	for _, state := range wl.Status.AdmissionChecks {
		ac := &kueue.AdmissionCheck{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: string(state.Name)}, ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting AdmissionCheck: %w", err)
		}
		if ac.Spec.ControllerName == courier.ControllerName {
			return ac, nil
		}
	}
	return nil, nil
}

// job returns the manager job that owns wl and its adapter. A nil job with
// a nil error means the job is gone. An owner of a kind Courier does not
// handle is an *adapter.Rejection.
func (r *Reconciler) job(ctx context.Context, wl *kueue.Workload) (*unstructured.Unstructured, adapter.Adapter, error) {
	ref := metav1.GetControllerOf(wl)
	if ref == nil {
		return nil, nil, &adapter.Rejection{Message: fmt.Sprintf("Workload %s/%s has no owning job; Courier dispatches only jobs.", wl.Namespace, wl.Name)}
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil, &adapter.Rejection{Message: fmt.Sprintf("Workload %s/%s has an owner with an invalid apiVersion %q.", wl.Namespace, wl.Name, ref.APIVersion)}
	}
	a, ok := r.adapters[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	if !ok {
		return nil, nil, &adapter.Rejection{Message: fmt.Sprintf("Courier does not dispatch %s.%s; add %s.%s.%s to the configuration's externalFrameworks.",
			ref.Kind, gv.Group, ref.Kind, gv.Version, gv.Group)}
	}
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(a.GVK())
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: ref.Name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, a, nil
		}
		return nil, nil, fmt.Errorf("getting %s: %w", a.GVK().Kind, err)
	}
	if job.GetUID() != ref.UID {
		return nil, a, nil
	}
	return job, a, nil
}

// jobInfo is the manager job of a Workload: the object, its adapter, and the
// objects it needs on a worker besides itself (PodGroups and their core
// Workloads), read from the manager.
type jobInfo struct {
	obj     *unstructured.Unstructured
	adapter adapter.Adapter
	deps    []*unstructured.Unstructured
}

// observe gathers what plan needs, from the manager's cache and the
// workers' informers.
func (r *Reconciler) observe(ctx context.Context, wl *kueue.Workload, ac *kueue.AdmissionCheck) (Observed, jobInfo, error) {
	o := Observed{
		Now:               r.now(),
		Workload:          wl,
		WorkerLostTimeout: r.opts.WorkerLostTimeout,
		Remotes:           map[string]Remote{},
		Health:            map[string]Health{},
	}
	if state := findCheck(wl, kueue.AdmissionCheckReference(ac.Name)); state != nil {
		o.Check = *state
	}
	var info jobInfo
	job, a, err := r.job(ctx, wl)
	var rej *adapter.Rejection
	switch {
	case errors.As(err, &rej):
		o.Rejection = rej.Message
	case err != nil:
		return o, info, err
	case job == nil:
		o.JobMissing = true
	default:
		if err := a.Check(job); errors.As(err, &rej) {
			o.Rejection = rej.Message
		}
	}
	info = jobInfo{obj: job, adapter: a}
	if o.Misconfigured, err = r.misconfiguration(ctx, wl, ac); err != nil {
		return o, info, err
	}
	if job != nil && o.Misconfigured == "" {
		if info.deps, o.Misconfigured, err = r.dependencies(ctx, job); err != nil {
			return o, info, err
		}
	}
	workers, err := r.workerClusters(ctx)
	if err != nil {
		return o, info, err
	}
	if o.Misconfigured == "" {
		names, msg, err := r.policyClusters(ctx, ac, workers)
		if err != nil {
			return o, info, err
		}
		o.Misconfigured = msg
		for _, name := range names {
			o.Candidates = append(o.Candidates, Candidate{Name: name, Unusable: r.unusable(wl, name, workers, info, o)})
		}
	}
	clusters := sets.New(r.cache.Names()...)
	if wl.Status.ClusterName != nil {
		clusters.Insert(*wl.Status.ClusterName)
	}
	for _, name := range sets.List(clusters) {
		o.Health[name] = r.health(name, workers)
		remote, err := r.cache.Get(name)
		if err != nil {
			continue
		}
		rs, err := r.remoteState(ctx, remote, wl, a)
		if err != nil {
			return o, info, fmt.Errorf("reading copies on %s: %w", name, err)
		}
		o.Remotes[name] = rs
	}
	return o, info, nil
}

// dependencies reads the PodGroups a job's pods name, and the core
// Workloads those take their templates from, from the manager. A missing
// one, or a manager that does not serve the kind, is a message for the
// user, not an error.
func (r *Reconciler) dependencies(ctx context.Context, job *unstructured.Unstructured) ([]*unstructured.Unstructured, string, error) {
	var deps []*unstructured.Unstructured
	get := func(gvk schema.GroupVersionKind, name, why string) (*unstructured.Unstructured, string, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := r.client.Get(ctx, client.ObjectKey{Namespace: job.GetNamespace(), Name: name}, obj)
		switch {
		case err == nil:
			return obj, "", nil
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("%s %s/%s, which %s, does not exist on the manager; create it there.", gvk.Kind, job.GetNamespace(), name, why), nil
		case meta.IsNoMatchError(err):
			return nil, fmt.Sprintf("The manager does not serve %s, which %s; enable the scheduling.k8s.io/v1alpha2 API there.", cluster.KindName(gvk), why), nil
		default:
			return nil, "", fmt.Errorf("getting %s: %w", gvk.Kind, err)
		}
	}
	for _, name := range adapter.PodGroupNames(job) {
		pg, msg, err := get(adapter.PodGroupGVK, name, "the job's pods name")
		if pg == nil {
			return nil, msg, err
		}
		deps = append(deps, pg)
		if wlName := adapter.TemplateWorkloadName(pg); wlName != "" {
			w, msg, err := get(adapter.SchedulingWorkloadGVK, wlName, "PodGroup "+name+" takes its template from")
			if w == nil {
				return nil, msg, err
			}
			deps = append(deps, w)
		}
	}
	return deps, "", nil
}

// workerClusters returns every WorkerCluster by name.
func (r *Reconciler) workerClusters(ctx context.Context) (map[string]*courier.WorkerCluster, error) {
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	out := make(map[string]*courier.WorkerCluster, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// policyClusters resolves the check's DispatchPolicy to cluster names, or
// says why it cannot.
func (r *Reconciler) policyClusters(ctx context.Context, ac *kueue.AdmissionCheck, workers map[string]*courier.WorkerCluster) ([]string, string, error) {
	policy, prob, err := resolvePolicy(ctx, r.client, ac)
	if err != nil {
		return nil, "", err
	}
	if prob != nil {
		return nil, prob.message, nil
	}
	names, err := policyMembers(policy, workers)
	if err != nil {
		return nil, fmt.Sprintf("DispatchPolicy %q has an invalid clusterSelector: %v.", policy.Name, err), nil
	}
	return names, "", nil
}

// policyMembers lists, sorted, the clusters a policy names or selects.
func policyMembers(policy *courier.DispatchPolicy, workers map[string]*courier.WorkerCluster) ([]string, error) {
	names := sets.New(policy.Spec.Clusters...)
	if policy.Spec.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(policy.Spec.ClusterSelector)
		if err != nil {
			return nil, err
		}
		for name, wc := range workers {
			if sel.Matches(labels.Set(wc.Labels)) {
				names.Insert(name)
			}
		}
	}
	return sets.List(names), nil
}

// unusable says why a cluster cannot take wl's job now, or "".
func (r *Reconciler) unusable(wl *kueue.Workload, name string, workers map[string]*courier.WorkerCluster, info jobInfo, o Observed) string {
	if _, ok := workers[name]; !ok {
		return "no such WorkerCluster"
	}
	remote, err := r.cache.Get(name)
	if err != nil {
		if active := meta.FindStatusCondition(workers[name].Status.Conditions, courier.WorkerClusterActive); active != nil && active.Status != metav1.ConditionTrue {
			return fmt.Sprintf("not Active (%s)", active.Reason)
		}
		return "not connected"
	}
	if !remote.Serves(workloadGVK) {
		return "does not serve Kueue Workloads"
	}
	if info.adapter != nil && !remote.Serves(info.adapter.GVK()) {
		return "does not serve " + cluster.KindName(info.adapter.GVK())
	}
	for _, dep := range info.deps {
		if !remote.Serves(dep.GroupVersionKind()) {
			return fmt.Sprintf("does not serve %s, which the job needs for gang scheduling", cluster.KindName(dep.GroupVersionKind()))
		}
	}
	return r.skips.reason(wl.UID, name, o.Now)
}

// health reports a cluster's connection. A WorkerCluster that no longer
// exists counts as lost since ever, so its jobs are dispatched again.
func (r *Reconciler) health(name string, workers map[string]*courier.WorkerCluster) Health {
	_, err := r.cache.Get(name)
	wc, ok := workers[name]
	switch {
	case err == nil:
		return Health{Connected: true}
	case !ok:
		return Health{DisconnectedSince: &metav1.Time{}}
	default:
		return Health{DisconnectedSince: wc.Status.DisconnectedSince}
	}
}

// remoteState reads Courier's copies of wl and its job on one worker.
func (r *Reconciler) remoteState(ctx context.Context, remote *cluster.Remote, wl *kueue.Workload, a adapter.Adapter) (Remote, error) {
	var rs Remote
	if remote.Serves(workloadGVK) {
		copy := &kueue.Workload{}
		err := remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), copy)
		switch {
		case err == nil && isCopyOf(copy, wl):
			rs.Workload = copy
		case err == nil:
			rs.Stale = true
		case !apierrors.IsNotFound(err):
			return rs, err
		}
	}
	jobs, err := r.remoteJobs(ctx, remote, wl.Namespace, wl.Name, a)
	if err != nil {
		return rs, err
	}
	rs.HasJob = len(jobs) > 0
	return rs, nil
}

// remoteJobs finds Courier's job copies for a Workload on one worker: of
// a's kind, or of every kind when a is nil.
func (r *Reconciler) remoteJobs(ctx context.Context, remote *cluster.Remote, ns, workload string, a adapter.Adapter) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, ad := range r.adapters {
		if a != nil && ad.GVK() != a.GVK() {
			continue
		}
		items, err := listRemote(ctx, remote, ad.GVK(), client.InNamespace(ns))
		if err != nil {
			return nil, err
		}
		for i := range items {
			if adapter.WorkloadName(&items[i]) == workload {
				out = append(out, &items[i])
			}
		}
	}
	return out, nil
}

// listRemote lists the objects of a kind that a worker's origin-filtered
// informers hold; none if the worker does not serve the kind.
func listRemote(ctx context.Context, remote *cluster.Remote, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	if !remote.Serves(gvk) {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := remote.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}
