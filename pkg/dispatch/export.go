package dispatch

import (
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/placement"
)

// Evictions is Kueue's count of a Workload's evictions, which a
// placement's Evictions must equal for the placement to be live. Tools
// that explain a placement (kubectl courier) read it as the dispatcher
// does.
func Evictions(wl *kueue.Workload) int32 { return evictions(wl) }

// PodSets are a Workload's pod sets as the placement planner counts them.
func PodSets(wl *kueue.Workload) []placement.PodSet { return podSetsOf(wl) }
