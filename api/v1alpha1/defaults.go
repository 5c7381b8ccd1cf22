package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The defaults of DispatchPolicy, declared here once; the field comments
// repeat them for readers of the CRD.
const (
	DefaultStrategy         = BestFit
	DefaultFanOut           = 1
	DefaultStepSize         = 1
	DefaultRoundTimeout     = time.Minute
	DefaultMaxMoves         = 3
	DefaultOnMovesExhausted = RejectWhenMovesExhausted
)

// WithDefaults returns a copy of the spec with every defaulted field set.
func (s DispatchPolicySpec) WithDefaults() DispatchPolicySpec {
	out := *s.DeepCopy()
	if out.Strategy == "" {
		out.Strategy = DefaultStrategy
	}
	if out.FanOut == nil {
		out.FanOut = ptr.To[int32](DefaultFanOut)
	}
	if out.StepSize == nil {
		out.StepSize = ptr.To[int32](DefaultStepSize)
	}
	if out.RoundTimeout == nil {
		out.RoundTimeout = &metav1.Duration{Duration: DefaultRoundTimeout}
	}
	if out.MaxMoves == nil {
		out.MaxMoves = ptr.To[int32](DefaultMaxMoves)
	}
	if out.OnMovesExhausted == "" {
		out.OnMovesExhausted = DefaultOnMovesExhausted
	}
	return out
}
