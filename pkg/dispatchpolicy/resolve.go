package dispatchpolicy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Problem is a configuration mistake: a condition reason and what to fix.
type Problem struct {
	Reason, Message string
}

// Resolve returns the DispatchPolicy an AdmissionCheck names, or the
// problem with its parameters.
func Resolve(ctx context.Context, c client.Client, ac *kueue.AdmissionCheck) (*courier.DispatchPolicy, *Problem, error) {
	params := ac.Spec.Parameters
	if params == nil || params.APIGroup != courier.GroupVersion.Group || params.Kind != "DispatchPolicy" || params.Name == "" {
		return nil, &Problem{courier.ReasonInvalidParameters,
			fmt.Sprintf("AdmissionCheck %q must set parameters to {apiGroup: %s, kind: DispatchPolicy, name: <policy>}.", ac.Name, courier.GroupVersion.Group)}, nil
	}
	policy := &courier.DispatchPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: params.Name}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Problem{courier.ReasonPolicyNotFound,
				fmt.Sprintf("DispatchPolicy %q, named by AdmissionCheck %q, does not exist.", params.Name, ac.Name)}, nil
		}
		return nil, nil, fmt.Errorf("getting DispatchPolicy: %w", err)
	}
	return policy, nil, nil
}

// Misconfiguration reports a ClusterQueue that runs both Courier's check
// ac and Kueue's MultiKueue check on the Workload: both would dispatch it.
func Misconfiguration(ctx context.Context, c client.Client, wl *kueue.Workload, ac *kueue.AdmissionCheck) (string, error) {
	if wl.Status.Admission == nil {
		return "", nil
	}
	cq := &kueue.ClusterQueue{}
	if err := c.Get(ctx, client.ObjectKey{Name: string(wl.Status.Admission.ClusterQueue)}, cq); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	other, err := multiKueueCheck(ctx, c, cq)
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

// Members lists, sorted, the clusters a policy names or selects.
func Members(policy *courier.DispatchPolicy, workers map[string]*courier.WorkerCluster) ([]string, error) {
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

// maxNoteLength bounds what a condition or check message repeats of a
// longer text, a CEL error say; the event carries the same words.
const maxNoteLength = 1024

// Truncate cuts s to maxNoteLength.
func Truncate(s string) string {
	if len(s) <= maxNoteLength {
		return s
	}
	return s[:maxNoteLength-3] + "..."
}
