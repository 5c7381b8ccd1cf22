package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// ExplainReport is what kubectl courier explain shows of a job.
type ExplainReport struct {
	metav1.TypeMeta `json:",inline"`
	Job             JobRef       `json:"job"`
	Workload        string       `json:"workload,omitempty"`
	Location        Location     `json:"location"`
	Check           *CheckStatus `json:"check,omitempty"`
	// Why answers, in a sentence, why the job is where it is.
	Why     string          `json:"why"`
	Policy  *PolicySummary  `json:"policy,omitempty"`
	Workers []WorkerVerdict `json:"workers,omitempty"`
}

// PolicySummary is the DispatchPolicy that applies to the job.
type PolicySummary struct {
	Name     string   `json:"name"`
	Strategy string   `json:"strategy"`
	Filter   string   `json:"filter,omitempty"`
	Score    string   `json:"score,omitempty"`
	Clusters []string `json:"clusters"`
}

// WorkerVerdict is one of the policy's workers, as the placement planner
// sees it from the WorkerClusters' status.
type WorkerVerdict struct {
	Name string `json:"name"`
	// Eligible workers may get a copy; the others were passed over.
	Eligible bool `json:"eligible"`
	// RoomNow is whether its quota has room for the job's pod sets now.
	RoomNow bool `json:"roomNow"`
	// Nominated is whether it holds a copy of the job's Workload.
	Nominated bool `json:"nominated"`
	// Reason says why it was passed over, or why it has no room now.
	Reason string `json:"reason,omitempty"`
	// Capacity is its WorkerCluster's capacity summary, used/nominal.
	Capacity string `json:"capacity,omitempty"`
}

func gatherExplain(ctx context.Context, c *clients, arg string) (report, error) {
	t, err := findTarget(ctx, c, arg)
	if err != nil {
		return nil, err
	}
	r := &ExplainReport{Job: t.ref}
	wl := t.workload
	if wl == nil {
		r.Why = "Kueue has not made a Workload for the job: check its kueue.x-k8s.io/queue-name label and that the LocalQueue exists."
		return r, nil
	}
	r.Workload, r.Location = wl.Name, locate(wl)
	if r.Check, err = courierCheck(ctx, c.manager, wl); err != nil {
		return nil, err
	}
	if r.Check == nil {
		r.Why = "The Workload has no Courier admission check: its ClusterQueue lists no AdmissionCheck with controllerName " + courier.ControllerName + "."
		return r, nil
	}
	if r.Check.Policy == "" {
		r.Why = fmt.Sprintf("AdmissionCheck %s names no DispatchPolicy; set its parameters to {apiGroup: %s, kind: DispatchPolicy, name: <policy>}.", r.Check.Name, courier.GroupVersion.Group)
		return r, nil
	}
	policy := &courier.DispatchPolicy{}
	if err := c.manager.Get(ctx, client.ObjectKey{Name: r.Check.Policy}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.Why = fmt.Sprintf("DispatchPolicy %s, named by AdmissionCheck %s, does not exist; create it.", r.Check.Policy, r.Check.Name)
			return r, nil
		}
		return nil, fmt.Errorf("getting DispatchPolicy %s: %w", r.Check.Policy, err)
	}
	workers := &courier.WorkerClusterList{}
	if err := c.manager.List(ctx, workers); err != nil {
		return nil, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	in, err := explainInputOf(wl, t, policy, workers.Items, c.now)
	if err != nil {
		r.Why = err.Error()
		return r, nil
	}
	r.Policy = in.summary
	var d placement.Decision
	r.Workers, d = explainWorkers(in)
	r.Why = why(wl, r.Check, r.Location, r.Workers, d)
	return r, nil
}

// explainInput is what explainWorkers decides on.
type explainInput struct {
	summary *PolicySummary
	plan    placement.Input
	// workers are the WorkerClusters by name.
	workers map[string]*courier.WorkerCluster
	// kinds are the kinds a worker must serve: Kueue's Workload and the
	// job's, as Kind.version.group.
	kinds    []string
	trainJob bool
}

// explainInputOf gathers the planner's input for a Workload. A policy
// whose CEL or selector is invalid is an error that says so.
func explainInputOf(wl *kueue.Workload, t *target, policy *courier.DispatchPolicy, workers []courier.WorkerCluster, now time.Time) (explainInput, error) {
	compiled, err := placement.Compile(policy.Spec)
	if err != nil {
		return explainInput{}, fmt.Errorf("DispatchPolicy %s is not valid: %v; fix it to dispatch", policy.Name, err)
	}
	in := explainInput{workers: map[string]*courier.WorkerCluster{}, trainJob: t.ref.Kind == "TrainJob"}
	members := sets.New(policy.Spec.Clusters...)
	var selector labels.Selector
	if policy.Spec.ClusterSelector != nil {
		if selector, err = metav1.LabelSelectorAsSelector(policy.Spec.ClusterSelector); err != nil {
			return explainInput{}, fmt.Errorf("DispatchPolicy %s has an invalid clusterSelector: %v", policy.Name, err)
		}
	}
	for i := range workers {
		wc := &workers[i]
		in.workers[wc.Name] = wc
		if selector != nil && selector.Matches(labels.Set(wc.Labels)) {
			members.Insert(wc.Name)
		}
	}
	in.kinds = []string{cluster.KindName(kueue.SchemeGroupVersion.WithKind("Workload")), cluster.KindName(t.job.GroupVersionKind())}
	in.summary = &PolicySummary{Name: policy.Name, Strategy: string(compiled.Strategy), Filter: policy.Spec.Filter, Score: policy.Spec.Score, Clusters: sets.List(members)}
	in.plan = placement.Input{
		Policy: compiled,
		Workload: placement.Workload{
			Namespace: wl.Namespace,
			Queue:     string(wl.Spec.QueueName),
			Priority:  ptr.Deref(wl.Spec.Priority, 0),
			Labels:    wl.Labels,
			PodSets:   workload.PodSets(wl),
			Object:    t.job.Object,
		},
		Started:   quotaReservedAt(wl, now),
		Now:       now,
		Nominated: wl.Status.NominatedClusterNames,
	}
	for _, name := range in.summary.Clusters {
		pc := placement.Cluster{Name: name, Unusable: in.unusable(name)}
		if wc := in.workers[name]; wc != nil {
			pc.Labels, pc.Capacity = wc.Labels, capacityOf(wc)
		}
		in.plan.Clusters = append(in.plan.Clusters, pc)
	}
	return in, nil
}

// explainWorkers runs the placement planner and tells, for each of the
// policy's workers, whether it is eligible, has room now and holds a
// copy, and why it was passed over or has no room.
func explainWorkers(in explainInput) ([]WorkerVerdict, placement.Decision) {
	d := placement.Plan(in.plan)
	nominated := sets.New(in.plan.Nominated...)
	byName := map[string]placement.Cluster{}
	for _, c := range in.plan.Clusters {
		byName[c.Name] = c
	}
	out := make([]WorkerVerdict, 0, len(d.Considered))
	for _, v := range d.Considered {
		wv := WorkerVerdict{Name: v.Cluster, Eligible: v.Eligible, Nominated: nominated.Has(v.Cluster), Reason: v.Reason}
		if wc := in.workers[v.Cluster]; wc != nil {
			wv.Capacity = wc.Status.CapacitySummary
		}
		if v.Eligible {
			var why string
			wv.RoomNow, why = placement.FitsNow(in.plan.Workload, byName[v.Cluster].Capacity)
			if !wv.RoomNow {
				wv.Reason = "no room now: " + why
			}
		}
		out = append(out, wv)
	}
	return out, d
}

// unusable says why a worker cannot take the job whatever the policy
// says, from its WorkerCluster's status, in the dispatcher's words; ""
// if it can. Foreign objects and missing namespaces, which the dispatcher
// remembers for a while, show only in the check's message.
func (in explainInput) unusable(name string) string {
	wc := in.workers[name]
	switch {
	case wc == nil:
		return "no such WorkerCluster"
	case wc.DeletionTimestamp != nil:
		return "its WorkerCluster is being deleted"
	}
	if patch := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterRuntimePatchValid); in.trainJob && patch != nil && patch.Status == metav1.ConditionFalse {
		return "its runtimePatch breaks Trainer's rules: " + patch.Message
	}
	active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive)
	switch {
	case active == nil:
		return "not connected"
	case active.Status != metav1.ConditionTrue:
		return fmt.Sprintf("not Active (%s)", active.Reason)
	}
	for _, kind := range in.kinds {
		if slices.Contains(wc.Status.UnavailableKinds, kind) {
			return "does not serve " + kind
		}
	}
	return ""
}

// capacityOf is a worker's capacity as its WorkerCluster's status sums it
// over all its ClusterQueues, flavors in the status's order. Placement
// itself reads the ClusterQueue of the job's LocalQueue, so this is an
// approximation for a worker with several ClusterQueues; an empty status
// is unknown capacity.
func capacityOf(wc *courier.WorkerCluster) placement.Capacity {
	if len(wc.Status.Capacity) == 0 {
		return placement.Capacity{}
	}
	c := placement.Capacity{Known: true}
	index := map[string]int{}
	for _, rc := range wc.Status.Capacity {
		i, ok := index[rc.Flavor]
		if !ok {
			i = len(c.Flavors)
			index[rc.Flavor] = i
			c.Flavors = append(c.Flavors, placement.Flavor{Name: rc.Flavor, Resources: map[corev1.ResourceName]placement.Quota{}})
		}
		q := placement.Quota{Nominal: rc.Nominal.MilliValue(), Usage: rc.Usage.MilliValue()}
		if rc.Borrowable != nil {
			q.Borrowable = rc.Borrowable.MilliValue()
		}
		if rc.Pending != nil {
			q.Pending = rc.Pending.MilliValue()
		}
		c.Flavors[i].Resources[corev1.ResourceName(rc.Resource)] = q
	}
	return c
}

// quotaReservedAt is when the Workload got its quota on the manager,
// from which rounds and maxWaitTime count.
func quotaReservedAt(wl *kueue.Workload, now time.Time) time.Time {
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return now
}

// why answers, in a sentence, why the job is where it is.
func why(wl *kueue.Workload, check *CheckStatus, loc Location, workers []WorkerVerdict, d placement.Decision) string {
	if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return "The job has finished."
	}
	switch kueue.CheckState(check.State) {
	case kueue.CheckStateReady:
		return "Not waiting: " + loc.Summary
	case kueue.CheckStateRejected:
		return "Courier rejected the job: " + check.Message
	case kueue.CheckStateRetry:
		return "Courier gave the job back to Kueue to be requeued: " + check.Message
	}
	if loc.Live {
		return loc.Summary
	}
	if !meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
		return "Waiting for quota on the manager: Kueue has not reserved it in the ClusterQueue yet, and Courier acts only after it has."
	}
	var others []string
	for _, c := range wl.Status.AdmissionChecks {
		if string(c.Name) != check.Name && c.State != kueue.CheckStateReady {
			others = append(others, string(c.Name))
		}
	}
	if len(others) > 0 {
		return "Waiting for the other admission checks to be Ready first: " + strings.Join(others, ", ") + "."
	}
	var eligible, roomy []string
	for _, w := range workers {
		if w.Eligible {
			eligible = append(eligible, w.Name)
			if w.RoomNow {
				roomy = append(roomy, w.Name)
			}
		}
	}
	switch {
	case len(workers) == 0:
		return "The DispatchPolicy has no clusters."
	case d.Impossible:
		return "No worker's quota could ever hold the whole job."
	case len(eligible) == 0:
		return "No worker is eligible; each one's reason is below."
	case len(roomy) == 0:
		return fmt.Sprintf("No worker has room for the job now; it waits until one does (eligible: %s).", strings.Join(eligible, ", "))
	case len(loc.Nominated) > 0:
		return "Waiting for the Kueue of a nominated worker to admit it: " + strings.Join(loc.Nominated, ", ") + "."
	}
	return "About to be sent to " + strings.Join(roomy, ", ") + "; Courier has not nominated a worker yet."
}
