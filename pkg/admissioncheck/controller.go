// Package admissioncheck keeps the Active condition of Courier's Kueue
// AdmissionChecks: whether the DispatchPolicy they name exists, compiles,
// and has a worker to dispatch to.
package admissioncheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
	"github.com/courierdev/courier/pkg/dispatchpolicy"
	"github.com/courierdev/courier/pkg/placement"
)

// admissionCheckReconciler keeps the Active condition of Courier's
// AdmissionChecks: True when the policy exists and one of its clusters is
// Active.
type admissionCheckReconciler struct {
	client   client.Client
	policies *placement.Cache
	unserved []string
}

// Setup adds the AdmissionCheck controller to mgr. policies is the
// compiled policies' cache the dispatcher shares; unserved are the
// configured job kinds the manager does not serve, which each check
// reports.
func Setup(mgr manager.Manager, policies *placement.Cache, unserved []string) error {
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
	policy, prob, err := dispatchpolicy.Resolve(ctx, r.client, ac)
	switch {
	case err != nil:
		return metav1.Condition{}, err
	case prob != nil:
		return inactive(prob.Reason, prob.Message), nil
	}
	if _, err := r.policies.Get(policy); err != nil {
		return inactive(courier.ReasonPolicyInvalid, dispatchpolicy.Truncate(fmt.Sprintf("DispatchPolicy %q is not valid: %v.", policy.Name, err))), nil
	}
	list := &courier.WorkerClusterList{}
	if err := r.client.List(ctx, list); err != nil {
		return metav1.Condition{}, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	workers := map[string]*courier.WorkerCluster{}
	for i := range list.Items {
		workers[list.Items[i].Name] = &list.Items[i]
	}
	members, err := dispatchpolicy.Members(policy, workers)
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
