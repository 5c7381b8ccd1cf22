package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/placement"
)

var workloadGVK = kueue.SchemeGroupVersion.WithKind("Workload")

// checkRef is Courier's admission check on a Workload: its state, and the
// AdmissionCheck object behind it, nil when that object is gone.
type checkRef struct {
	state *kueue.AdmissionCheckState
	ac    *kueue.AdmissionCheck
	// missing names the checks on the Workload whose AdmissionCheck object
	// does not exist; one of them may have been Courier's.
	missing []string
}

// courierCheck finds Courier's admission check on a Workload.
func (r *Reconciler) courierCheck(ctx context.Context, wl *kueue.Workload) (checkRef, error) {
	var ref checkRef
	for i := range wl.Status.AdmissionChecks {
		state := &wl.Status.AdmissionChecks[i]
		ac := &kueue.AdmissionCheck{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: string(state.Name)}, ac); err != nil {
			if !apierrors.IsNotFound(err) {
				return ref, fmt.Errorf("getting AdmissionCheck: %w", err)
			}
			ref.missing = append(ref.missing, string(state.Name))
			continue
		}
		if ac.Spec.ControllerName == courier.ControllerName {
			return checkRef{state: state, ac: ac}, nil
		}
	}
	return ref, nil
}

// adopt decides whether a Workload whose Courier AdmissionCheck cannot be
// found is still Courier's: it is if Courier placed it or holds copies of
// it. Then the one check whose AdmissionCheck is missing is taken to be
// Courier's, and the Workload goes on being mirrored and finished.
func (r *Reconciler) adopt(ctx context.Context, wl *kueue.Workload, ref checkRef, record *Placement) (checkRef, bool, error) {
	if ref.ac != nil {
		return ref, true, nil
	}
	ours := record != nil
	if !ours {
		var err error
		if ours, err = r.hasCopies(ctx, wl); err != nil {
			return ref, false, err
		}
	}
	if ours && len(ref.missing) == 1 {
		ref.state = findCheck(wl, kueue.AdmissionCheckReference(ref.missing[0]))
	}
	return ref, ours, nil
}

// missingMessage reports an AdmissionCheck that is gone.
func (ref checkRef) missingMessage() string {
	if ref.ac != nil {
		return ""
	}
	if ref.state != nil {
		return fmt.Sprintf("AdmissionCheck %q no longer exists; Courier goes on mirroring what runs and dispatches nothing new for this workload. Re-create it to go on.", ref.state.Name)
	}
	return "Courier's AdmissionCheck is no longer on this workload; Courier goes on mirroring what runs and dispatches nothing new for it."
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

// jobInfo is the manager job of a Workload: the object, its adapter, its
// name (known from the Workload even when the object is gone), and the
// objects it needs on a worker besides itself (PodGroups and their core
// Workloads), read from the manager.
type jobInfo struct {
	obj     *unstructured.Unstructured
	adapter adapter.Adapter
	name    string
	deps    []*unstructured.Unstructured
	// patches are the workers' own RuntimePatches, by cluster.
	patches map[string]*trainer.TrainingRuntimeSpecPatch
}

// observe gathers what plan needs, from the manager's cache and the
// workers' informers.
func (r *Reconciler) observe(ctx context.Context, wl *kueue.Workload, ref checkRef, record *Placement, seen *expect.Seen) (Observed, jobInfo, error) {
	o := Observed{
		Now:               r.now(),
		Workload:          wl,
		CheckMissing:      ref.missingMessage(),
		Placement:         record,
		Evictions:         evictions(wl),
		WorkerLostTimeout: r.opts.WorkerLostTimeout,
		Remotes:           map[string]Remote{},
		Health:            map[string]Health{},
	}
	for c, n := range r.exp.PassedOver(wl.UID, o.Now) {
		o.PassedOver = passOver(o.PassedOver, c, n)
	}
	if ref.state != nil {
		o.Check, o.HasCheck = *ref.state, true
	}
	for _, c := range wl.Status.AdmissionChecks {
		if (ref.state == nil || c.Name != ref.state.Name) && c.State != kueue.CheckStateReady {
			o.ChecksNotReady = append(o.ChecksNotReady, string(c.Name))
		}
	}
	var info jobInfo
	if owner := metav1.GetControllerOf(wl); owner != nil {
		info.name = owner.Name
	}
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
		o.JobEnd = a.Outcome(job)
		o.jobBehind = r.exp.Behind(job.GetUID(), job.GetResourceVersion(), o.Now)
		if !o.jobBehind {
			seen.CaughtUp = append(seen.CaughtUp, job.GetUID())
		}
	}
	info.obj, info.adapter = job, a
	if ref.ac != nil {
		if o.Misconfigured, err = r.misconfiguration(ctx, wl, ref.ac); err != nil {
			return o, info, err
		}
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
	info.patches = map[string]*trainer.TrainingRuntimeSpecPatch{}
	for name, wc := range workers {
		if wc.Spec.RuntimePatch != nil {
			info.patches[name] = wc.Spec.RuntimePatch
		}
	}
	var policy placement.Policy
	if ref.ac != nil && o.Misconfigured == "" && waitsForWorker(o) {
		var names []string
		names, policy, o.Misconfigured, err = r.policyClusters(ctx, ref.ac, workers)
		if err != nil {
			return o, info, err
		}
		for _, name := range names {
			c := Candidate{Name: name}
			c.Unusable, c.Refuses = r.unusable(wl, name, workers, info, &o)
			o.Candidates = append(o.Candidates, c)
		}
	}
	clusters := sets.New(r.remotes.Names()...)
	clusters.Insert(wl.Status.NominatedClusterNames...)
	if wl.Status.ClusterName != nil {
		clusters.Insert(*wl.Status.ClusterName)
	}
	if record != nil {
		clusters.Insert(record.Cluster)
	}
	for _, name := range sets.List(clusters) {
		o.Health[name] = r.health(name, workers)
		remote, err := r.remotes.Get(name)
		if err != nil {
			continue
		}
		rs, err := r.remoteState(ctx, remote, wl, info, seen)
		if err != nil {
			return o, info, fmt.Errorf("reading copies on %s: %w", name, err)
		}
		o.Remotes[name] = rs
	}
	live := livePlacement(o)
	if live != "" {
		o.PlacedRefusal = o.PassedOver[live].Reason
	}
	for name, rs := range o.Remotes {
		if rs.unseenJob && name != live {
			// A job copy Courier created moments ago that the worker's
			// informer has not shown yet (its watch starting again after
			// the worker's API server came back, say) may be running, and
			// no delete found it: it counts as an old copy until the
			// informer shows it, which its event follows, or has read past
			// its create without it (stillUnseen).
			// Found by the soak (docs/soak.md, finding 18).
			rs.OldJob = true
			o.Remotes[name] = rs
			o.UnseenJob = true
		}
	}
	if c := live; c != "" && o.Rejection == "" && job != nil {
		if rs := o.Remotes[c]; rs.jobCopy != nil {
			f, err := a.Forward(job, rs.jobCopy, adapter.Destination{Workload: wl.Name, Origin: r.opts.Origin, RuntimePatch: info.patches[c]})
			if err != nil && !errors.As(err, &rej) {
				return o, info, fmt.Errorf("comparing the job with its copy on %s: %w", c, err)
			}
			if err == nil {
				rs.Forward = &f
				o.Remotes[c] = rs
			}
		}
	}
	if len(o.Candidates) > 0 {
		in := r.placementInput(wl, info, policy, o, workers, seen)
		d := placement.Plan(in)
		o.Decision = &d
		// What each worker's room looked like is what a surprising
		// nomination is explained by, and a snapshot is gone a second later.
		if log := ctrl.LoggerFrom(ctx).V(4); log.Enabled() {
			for _, c := range in.Clusters {
				log.Info("Placing with capacity", "cluster", c.Name, "unusable", c.Unusable, "capacity", c.Capacity, "nominate", d.Nominate)
			}
		}
	}
	return o, info, nil
}

// placementOf reads the placement recorded on a manager Workload. A
// record that does not parse was not written by Courier; it is reported
// and ignored.
func placementOf(wl *kueue.Workload) (*Placement, error) {
	raw, ok := wl.Annotations[courier.PlacementAnnotation]
	if !ok {
		return nil, nil
	}
	p := &Placement{}
	if err := json.Unmarshal([]byte(raw), p); err != nil || p.Cluster == "" {
		return nil, fmt.Errorf("annotation %s=%q is not a placement Courier wrote; remove it", courier.PlacementAnnotation, raw)
	}
	return p, nil
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
	// Every pass reads them and none writes them: the cache's own objects,
	// not copies (their status, with the workers' capacity, made a copy
	// per pass 2% of what Courier allocated). Nothing may change them.
	if err := r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	out := make(map[string]*courier.WorkerCluster, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// policyClusters resolves the check's DispatchPolicy to cluster names and
// its compiled placement rules, or says why it cannot.
func (r *Reconciler) policyClusters(ctx context.Context, ac *kueue.AdmissionCheck, workers map[string]*courier.WorkerCluster) ([]string, placement.Policy, string, error) {
	policy, prob, err := resolvePolicy(ctx, r.client, ac)
	if err != nil {
		return nil, placement.Policy{}, "", err
	}
	if prob != nil {
		return nil, placement.Policy{}, prob.message, nil
	}
	compiled, err := r.policies.Get(policy)
	if err != nil {
		return nil, placement.Policy{}, truncate(fmt.Sprintf("DispatchPolicy %q is not valid: %v; fix it to dispatch.", policy.Name, err), maxNoteLength), nil
	}
	names, err := policyMembers(policy, workers)
	if err != nil {
		return nil, placement.Policy{}, fmt.Sprintf("DispatchPolicy %q has an invalid clusterSelector: %v.", policy.Name, err), nil
	}
	return names, compiled, "", nil
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

// unusable says why a cluster cannot take wl's job now, or "", and why the
// job as it is can never go there, or "".
func (r *Reconciler) unusable(wl *kueue.Workload, name string, workers map[string]*courier.WorkerCluster, info jobInfo, o *Observed) (string, string) {
	wc, ok := workers[name]
	if !ok {
		return "no such WorkerCluster", ""
	}
	if wc.DeletionTimestamp != nil {
		return "its WorkerCluster is being deleted", ""
	}
	if info.obj != nil {
		err := info.adapter.CheckDestination(info.obj, adapter.Destination{Workload: wl.Name, Origin: r.opts.Origin, RuntimePatch: wc.Spec.RuntimePatch})
		var rej *adapter.Rejection
		var unsuitable *adapter.Unsuitable
		switch {
		case errors.As(err, &unsuitable):
			return "its runtimePatch breaks Trainer's rules: " + unsuitable.Message, ""
		case errors.As(err, &rej):
			return "", rej.Message
		}
	}
	remote, err := r.remotes.Get(name)
	if err != nil {
		if active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive); active != nil && active.Status != metav1.ConditionTrue {
			return fmt.Sprintf("not Active (%s)", active.Reason), ""
		}
		return "not connected", ""
	}
	if !remote.Serves(workloadGVK) {
		return "does not serve Kueue Workloads", ""
	}
	if info.adapter != nil && !remote.Serves(info.adapter.GVK()) {
		return "does not serve " + cluster.KindName(info.adapter.GVK()), ""
	}
	for _, dep := range info.deps {
		if !remote.Serves(dep.GroupVersionKind()) {
			return fmt.Sprintf("does not serve %s, which the job needs for gang scheduling", cluster.KindName(dep.GroupVersionKind())), ""
		}
	}
	if n, ok := o.PassedOver[name]; ok {
		return n.Reason, ""
	}
	if slices.Contains(wl.Status.NominatedClusterNames, name) {
		return "", "" // Its copy there is made or being made; it keeps its place.
	}
	n, ok := r.exp.FailingNote(expect.NamespaceKey{Cluster: name, Namespace: wl.Namespace}, o.Now)
	if !ok {
		return "", ""
	}
	// The job is passed over there as if its own create had failed, and
	// planned again when the note ends.
	o.PassedOver = passOver(o.PassedOver, name, n)
	return n.Reason, ""
}

// passOver adds worker c's note n to notes.
func passOver(notes map[string]PassOver, c string, n expect.Note) map[string]PassOver {
	if notes == nil {
		notes = map[string]PassOver{}
	}
	notes[c] = PassOver{Reason: n.Reason, Until: n.Until}
	return notes
}
