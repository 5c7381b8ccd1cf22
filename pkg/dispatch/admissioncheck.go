package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
)

// problem is a configuration mistake: a condition reason and what to fix.
type problem struct {
	reason, message string
}

// resolvePolicy returns the DispatchPolicy an AdmissionCheck names, or the
// problem with its parameters.
func resolvePolicy(ctx context.Context, c client.Client, ac *kueue.AdmissionCheck) (*courier.DispatchPolicy, *problem, error) {
	params := ac.Spec.Parameters
	if params == nil || params.APIGroup != courier.GroupVersion.Group || params.Kind != "DispatchPolicy" || params.Name == "" {
		return nil, &problem{courier.ReasonInvalidParameters,
			fmt.Sprintf("AdmissionCheck %q must set parameters to {apiGroup: %s, kind: DispatchPolicy, name: <policy>}.", ac.Name, courier.GroupVersion.Group)}, nil
	}
	policy := &courier.DispatchPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: params.Name}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &problem{courier.ReasonPolicyNotFound,
				fmt.Sprintf("DispatchPolicy %q, named by AdmissionCheck %q, does not exist.", params.Name, ac.Name)}, nil
		}
		return nil, nil, fmt.Errorf("getting DispatchPolicy: %w", err)
	}
	return policy, nil, nil
}

// misconfiguration reports a ClusterQueue that runs both Courier's check
// and Kueue's MultiKueue check: both would dispatch the workload.
func (r *Reconciler) misconfiguration(ctx context.Context, wl *kueue.Workload, ac *kueue.AdmissionCheck) (string, error) {
	if wl.Status.Admission == nil {
		return "", nil
	}
	cq := &kueue.ClusterQueue{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: string(wl.Status.Admission.ClusterQueue)}, cq); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	other, err := multiKueueCheck(ctx, r.client, cq)
	if err != nil || other == "" {
		return "", err
	}
	return fmt.Sprintf("ClusterQueue %q runs both Courier's admission check %q and MultiKueue's %q, which would dispatch the workload twice; remove one of them.",
		cq.Name, ac.Name, other), nil
}

// multiKueueCheck returns the name of a MultiKueue check the ClusterQueue
// runs, or "".
func multiKueueCheck(ctx context.Context, c client.Client, cq *kueue.ClusterQueue) (string, error) {
	if cq.Spec.AdmissionChecksStrategy == nil {
		return "", nil
	}
	for _, rule := range cq.Spec.AdmissionChecksStrategy.AdmissionChecks {
		ac := &kueue.AdmissionCheck{}
		if err := c.Get(ctx, client.ObjectKey{Name: string(rule.Name)}, ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("getting AdmissionCheck: %w", err)
		}
		if ac.Spec.ControllerName == kueue.MultiKueueControllerName {
			return ac.Name, nil
		}
	}
	return "", nil
}

// admissionCheckReconciler keeps the Active condition of Courier's
// AdmissionChecks: True when the policy exists and one of its clusters is
// Active.
type admissionCheckReconciler struct {
	client   client.Client
	policies *placement.Cache
	unserved []string
}

func setupAdmissionChecks(mgr manager.Manager, policies *placement.Cache, unserved []string) error {
	r := &admissionCheckReconciler{client: mgr.GetClient(), policies: policies, unserved: unserved}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.(*kueue.AdmissionCheck).Spec.ControllerName == courier.ControllerName
	})
	err := builder.ControllerManagedBy(mgr).
		Named("admissioncheck").
		For(&kueue.AdmissionCheck{}, builder.WithPredicates(ours)).
		Watches(&courier.DispatchPolicy{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Watches(&courier.WorkerCluster{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the AdmissionCheck controller: %w", err)
	}
	return nil
}

func (r *admissionCheckReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ac := &kueue.AdmissionCheck{}
	if err := r.client.Get(ctx, req.NamespacedName, ac); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ac.Spec.ControllerName != courier.ControllerName {
		return reconcile.Result{}, nil
	}
	cond, err := r.activeCondition(ctx, ac)
	if err != nil {
		return reconcile.Result{}, err
	}
	cond.ObservedGeneration = ac.Generation
	if len(r.unserved) > 0 {
		cond.Message += fmt.Sprintf(" Not dispatching %s: the manager's API server does not serve them; install their CRDs on the manager and restart Courier.",
			strings.Join(r.unserved, ", "))
	}
	before := ac.DeepCopy()
	if !meta.SetStatusCondition(&ac.Status.Conditions, cond) {
		return reconcile.Result{}, nil
	}
	if err := r.client.Status().Patch(ctx, ac, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching AdmissionCheck status: %w", err)
	}
	return reconcile.Result{}, nil
}

func (r *admissionCheckReconciler) activeCondition(ctx context.Context, ac *kueue.AdmissionCheck) (metav1.Condition, error) {
	inactive := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: kueue.AdmissionCheckActive, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	policy, prob, err := resolvePolicy(ctx, r.client, ac)
	switch {
	case err != nil:
		return metav1.Condition{}, err
	case prob != nil:
		return inactive(prob.reason, prob.message), nil
	}
	if _, err := r.policies.Get(policy); err != nil {
		return inactive(courier.ReasonPolicyInvalid, truncate(fmt.Sprintf("DispatchPolicy %q is not valid: %v.", policy.Name, err), maxNoteLength)), nil
	}
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list); err != nil {
		return metav1.Condition{}, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	workers := map[string]*courier.WorkerCluster{}
	for i := range list.Items {
		workers[list.Items[i].Name] = &list.Items[i]
	}
	members, err := policyMembers(policy, workers)
	if err != nil {
		return inactive(courier.ReasonInvalidParameters, fmt.Sprintf("DispatchPolicy %q has an invalid clusterSelector: %v.", policy.Name, err)), nil
	}
	var active []string
	for _, name := range members {
		if wc, ok := workers[name]; ok && meta.IsStatusConditionTrue(wc.Status.Conditions, courier.WorkerClusterActive) {
			active = append(active, name)
		}
	}
	if len(active) == 0 {
		return inactive(courier.ReasonNoActiveClusters, fmt.Sprintf("None of DispatchPolicy %q's clusters (%s) is Active.", policy.Name, strings.Join(orNone(members), ", "))), nil
	}
	slices.Sort(active)
	return metav1.Condition{Type: kueue.AdmissionCheckActive, Status: metav1.ConditionTrue, Reason: courier.ReasonAdmissionCheckActive,
		Message: fmt.Sprintf("Dispatching to %s.", strings.Join(active, ", "))}, nil
}

func (r *admissionCheckReconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kueue.AdmissionCheckList{}
	if err := r.client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing AdmissionChecks to queue")
		return nil
	}
	var reqs []reconcile.Request
	for _, ac := range list.Items {
		if ac.Spec.ControllerName == courier.ControllerName {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ac)})
		}
	}
	return reqs
}

func orNone(names []string) []string {
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}
