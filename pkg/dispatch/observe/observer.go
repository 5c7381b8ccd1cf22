package observe

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/lostworker"
	"github.com/courierdev/courier/pkg/placement"
)

// Observer reads what a pass decides on.
type Observer struct {
	Client       client.Client
	Remotes      cluster.Connections
	Expectations *expect.Expectations
	// Adapters handle the job kinds Courier dispatches, by group and kind.
	Adapters map[schema.GroupKind]adapter.Adapter
	// Policies holds the DispatchPolicies' compiled CEL.
	Policies          *placement.Cache
	Origin            string
	WorkerLostTimeout time.Duration
	// StatusMirrorDelay is the least time between two mirrors of a running
	// job's status, and from its copy's creation to the first.
	StatusMirrorDelay time.Duration
	// KueueFinishGrace is plan.Observed's.
	KueueFinishGrace time.Duration
	// Lost are the lost-worker settings.
	Lost lostworker.Settings
	Now  func() time.Time
}

// Result is one observation: what the planner decides on, the manager job
// the act step works with, the AdmissionCheck Courier writes, and what
// settles expectations.
type Result struct {
	Observed plan.Observed
	Job      workload.Job
	// Check names Courier's admission check on the Workload, "" if none.
	Check kueue.AdmissionCheckReference
	Seen  expect.Seen
}

// findCheck returns the state of the named admission check, or nil.
func findCheck(wl *kueue.Workload, name kueue.AdmissionCheckReference) *kueue.AdmissionCheckState {
	for i := range wl.Status.AdmissionChecks {
		if wl.Status.AdmissionChecks[i].Name == name {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}

// createdLately reports whether the copy of gvk of Workload wl that
// Courier created on cluster counts as there though the worker's informer
// does not show it (expect.StillUnseen).
func (ob *Observer) createdLately(cluster string, gvk schema.GroupVersionKind, wl types.UID, now time.Time) bool {
	c, ok := ob.Expectations.CreatedCopy(expect.CopyKey{Cluster: cluster, Kind: gvk.Kind, Workload: wl}, now)
	if !ok {
		return false
	}
	return ob.Expectations.StillUnseen(c, now, func(version string) bool {
		remote, err := ob.Remotes.Get(cluster)
		// A worker out of reach holds the job back by itself.
		return err != nil || remote.Reached(gvk, version)
	})
}
