package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/dispatchpolicy"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/placement"
)

// workerClusters returns every WorkerCluster by name.
func (ob *Observer) workerClusters(ctx context.Context) (map[string]*courier.WorkerCluster, error) {
	list := &courier.WorkerClusterList{}
	// Every pass reads them and none writes them: the cache's own objects,
	// not copies of their large status. Nothing may change them.
	if err := ob.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
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
func (ob *Observer) policyClusters(ctx context.Context, ac *kueue.AdmissionCheck, workers map[string]*courier.WorkerCluster) ([]string, placement.Policy, string, error) {
	policy, prob, err := dispatchpolicy.Resolve(ctx, ob.Client, ac)
	if err != nil {
		return nil, placement.Policy{}, "", err
	}
	if prob != nil {
		return nil, placement.Policy{}, prob.Message, nil
	}
	compiled, err := ob.Policies.Get(policy)
	if err != nil {
		return nil, placement.Policy{}, dispatchpolicy.Truncate(fmt.Sprintf("DispatchPolicy %q is not valid: %v; fix it to dispatch.", policy.Name, err)), nil
	}
	names, err := dispatchpolicy.Members(policy, workers)
	if err != nil {
		return nil, placement.Policy{}, fmt.Sprintf("DispatchPolicy %q has an invalid clusterSelector: %v.", policy.Name, err), nil
	}
	return names, compiled, "", nil
}

// unusable says why a cluster cannot take wl's job now, or "", and why the
// job as it is can never go there, or "".
func (ob *Observer) unusable(wl *kueue.Workload, name string, workers map[string]*courier.WorkerCluster, info workload.Job, o *plan.Observed) (string, string) {
	wc, ok := workers[name]
	if !ok {
		return "no such WorkerCluster", ""
	}
	if wc.DeletionTimestamp != nil {
		return "its WorkerCluster is being deleted", ""
	}
	if info.Obj != nil {
		err := info.Adapter.CheckDestination(info.Obj, adapter.Destination{Workload: wl.Name, Origin: ob.Origin, RuntimePatch: wc.Spec.RuntimePatch})
		var rej *adapter.Rejection
		var unsuitable *adapter.Unsuitable
		switch {
		case errors.As(err, &unsuitable):
			return "its runtimePatch breaks Trainer's rules: " + unsuitable.Message, ""
		case errors.As(err, &rej):
			return "", rej.Message
		}
	}
	remote, err := ob.Remotes.Get(name)
	if err != nil {
		if active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive); active != nil && active.Status != metav1.ConditionTrue {
			return fmt.Sprintf("not Active (%s)", active.Reason), ""
		}
		return "not connected", ""
	}
	if !remote.Serves(workload.GVK) {
		return "does not serve Kueue Workloads", ""
	}
	if info.Adapter != nil && !remote.Serves(info.Adapter.GVK()) {
		return "does not serve " + cluster.KindName(info.Adapter.GVK()), ""
	}
	for _, dep := range info.Deps {
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
	n, ok := ob.Expectations.FailingNote(expect.NamespaceKey{Cluster: name, Namespace: wl.Namespace}, o.Now)
	if !ok {
		return "", ""
	}
	// The job is passed over there as if its own create had failed, and
	// planned again when the note ends.
	o.PassedOver = passOver(o.PassedOver, name, n)
	return n.Reason, ""
}

// passOver adds worker c's note n to notes.
func passOver(notes map[string]plan.PassOver, c string, n expect.Note) map[string]plan.PassOver {
	if notes == nil {
		notes = map[string]plan.PassOver{}
	}
	notes[c] = plan.PassOver{Reason: n.Reason, Until: n.Until}
	return notes
}

// health reports a cluster as dispatch sees it. A worker is lost from when
// it stopped being a place for work: its first disconnect, which counts a
// configuration error only after the worker was Active (see the
// WorkerCluster's disconnectedSince), and never from before Courier
// started; the deletion of its WorkerCluster; or for ever, for a cluster
// that has no WorkerCluster. What becomes of its jobs then is its policy's.
func (ob *Observer) health(name string, workers map[string]*courier.WorkerCluster) plan.Health {
	_, err := ob.Remotes.Get(name)
	h := plan.Health{Connected: err == nil, Policy: courier.LostWorkerTimeout}
	wc, ok := workers[name]
	if ok {
		h.Policy = lostworker.PolicyOf(wc, ob.Lost)
		h.FenceAnswered = lostworker.FenceAnswered(wc)
		h.MovableAt = lostworker.MovableAt(wc, ob.Lost)
	}
	switch {
	case !ok:
		h.LostSince, h.LostReason, h.LostWhy = &metav1.Time{}, courier.EventWorkerLost, "has no WorkerCluster any more"
	case wc.DeletionTimestamp != nil:
		h.LostSince, h.LostReason = wc.DeletionTimestamp, courier.EventWorkerDraining
		h.LostWhy = "has been draining since its WorkerCluster was deleted at " + stamp(wc.DeletionTimestamp)
	case !h.Connected && wc.Status.DisconnectedSince != nil:
		since := &metav1.Time{Time: lostworker.Clamp(wc.Status.DisconnectedSince.Time, ob.Lost)}
		h.LostSince, h.LostReason = since, courier.EventWorkerLost
		h.LostWhy = "has been unreachable since " + stamp(wc.Status.DisconnectedSince)
		if active := meta.FindStatusCondition(wc.Status.Conditions, courier.WorkerClusterActive); active != nil &&
			active.Status == metav1.ConditionFalse && active.Reason != courier.ReasonUnreachable && active.Reason != courier.ReasonSelfFault {
			h.LostReason = courier.EventWorkerUnusable
			h.LostWhy = fmt.Sprintf("has refused Courier's connection (%s) since %s", active.Reason, stamp(wc.Status.DisconnectedSince))
		}
	}
	return h
}

func stamp(t *metav1.Time) string { return t.UTC().Format(time.RFC3339) }
