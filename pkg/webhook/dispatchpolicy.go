package webhook

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/placement"
)

// policyValidator compiles a DispatchPolicy's CEL at admission, so that a
// typo is an error at kubectl apply rather than a Valid=False condition
// found later.
type policyValidator struct {
	decoder admission.Decoder
}

func (v *policyValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	policy := &courier.DispatchPolicy{}
	if err := v.decoder.Decode(req, policy); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := ValidatePolicy(policy); len(errs) > 0 {
		return denied(courier.GroupVersion.WithKind("DispatchPolicy").GroupKind(), policy.Name, errs)
	}
	return admission.Allowed("")
}

// ValidatePolicy compiles the policy's filter and score.
func ValidatePolicy(policy *courier.DispatchPolicy) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if policy.Spec.Filter != "" {
		if _, err := placement.CompileFilter(policy.Spec.Filter); err != nil {
			errs = append(errs, field.Invalid(spec.Child("filter"), policy.Spec.Filter, err.Error()))
		}
	}
	if policy.Spec.Score != "" {
		if _, err := placement.CompileScore(policy.Spec.Score); err != nil {
			errs = append(errs, field.Invalid(spec.Child("score"), policy.Spec.Score, err.Error()))
		}
	}
	return errs
}
