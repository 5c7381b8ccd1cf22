// Package dispatchpolicy keeps each DispatchPolicy's Valid condition and
// resolves the policy an AdmissionCheck names, for the dispatcher and the
// AdmissionCheck controller.
package dispatchpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
)

// +kubebuilder:rbac:groups=courier.dev,resources=dispatchpolicies/status,verbs=patch

// policyReconciler keeps each DispatchPolicy's Valid condition: whether its
// filter and score compile. The compiled programs are kept in the cache
// the dispatcher reads, so CEL is compiled once per policy generation.
type policyReconciler struct {
	client   client.Client
	policies *placement.Cache
	recorder events.EventRecorder
}

// Setup adds the DispatchPolicy controller to mgr; it compiles each
// policy into policies, the cache the dispatcher reads.
func Setup(mgr ctrl.Manager, policies *placement.Cache) error {
	r := &policyReconciler{client: mgr.GetClient(), policies: policies, recorder: mgr.GetEventRecorder("courier-dispatchpolicy")}
	err := builder.ControllerManagedBy(mgr).
		Named("dispatchpolicy").
		For(&courier.DispatchPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the DispatchPolicy controller: %w", err)
	}
	return nil
}

func (r *policyReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	policy := &courier.DispatchPolicy{}
	if err := r.client.Get(ctx, req.NamespacedName, policy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond := validCondition(r.policies, policy)
	before := policy.DeepCopy()
	changed := meta.SetStatusCondition(&policy.Status.Conditions, cond)
	if !changed && policy.Status.ObservedGeneration == policy.Generation {
		return reconcile.Result{}, nil
	}
	policy.Status.ObservedGeneration = policy.Generation
	if err := r.client.Status().Patch(ctx, policy, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching DispatchPolicy status: %w", err)
	}
	if changed && cond.Status == metav1.ConditionFalse {
		r.recorder.Eventf(policy, nil, corev1.EventTypeWarning, cond.Reason, "Compile", "%s", cond.Message)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("DispatchPolicy checked", "valid", cond.Status)
	return reconcile.Result{}, nil
}

// validCondition says whether a policy's CEL compiles.
func validCondition(policies *placement.Cache, policy *courier.DispatchPolicy) metav1.Condition {
	cond := metav1.Condition{Type: courier.DispatchPolicyValid, ObservedGeneration: policy.Generation}
	if _, err := policies.Get(policy); err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, courier.ReasonInvalidExpression
		cond.Message = Truncate(fmt.Sprintf("%v. Fix the expression; until then the AdmissionChecks that name this policy are inactive.", err))
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, courier.ReasonCompiled
	cond.Message = "The filter and score, if any, compile."
	return cond
}
