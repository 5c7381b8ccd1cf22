package act

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
)

// Actor carries out plans.
type Actor struct {
	Client       client.Client
	Remotes      cluster.Connections
	Expectations *expect.Expectations
	Recorder     events.EventRecorder
	// Adapters handle the job kinds Courier dispatches, by group and kind;
	// AdapterList is the same, in the configuration's order.
	Adapters    map[schema.GroupKind]adapter.Adapter
	AdapterList []adapter.Adapter
	Origin      string
	// StatusInObject are served kinds without a status subresource, whose
	// mirrored status is patched into the object itself.
	StatusInObject []schema.GroupVersionKind
	Now            func() time.Time
}

// Input is one pass to carry out: the plan, and what it was made from.
type Input struct {
	Observed plan.Observed
	Plan     plan.Plan
	Job      workload.Job
	// Check names Courier's admission check on the Workload, "" if none.
	Check kueue.AdmissionCheckReference
	Seen  expect.Seen
}

// requeueSoon is when to look again after passing a worker over, or at
// state that is about to change.
const requeueSoon = time.Second

// afterConflict is when a pass whose write on a manager Workload was
// refused looks again. The newer version's event may have come before the
// refusal was noted, and gone by as one no plan reads: the pass does not
// wait for it. If the cache still shows the old version then, the pass
// waits for the event, which the note now lets through.
const afterConflict = 20 * time.Millisecond

// pass is a plan being carried out: what the steps leave to the ones after
// them and to the end of the pass.
type pass struct {
	Input
	wl     *kueue.Workload
	result reconcile.Result
	// status is what the status write carries; a step may withhold it.
	status *plan.StatusChange
	// events are what a pass that runs to its end reports; acted, what it
	// did (a copy made, a worker passed over, copies removed), which is all
	// a pass that stops early reports, unless reportAll: the next pass
	// plans the rest again, from the newer version, and says it then.
	events, acted []plan.Event
	reportAll     bool
	// jobEvents are recorded on the manager's job.
	jobEvents []plan.Event
	out       outcome
	// failed is an error a step met that ends the pass in an error once
	// the steps after it are done.
	failed error
}

// step carries out one part of a plan. It returns done to end the pass
// early, with p.result set, or an error that ends it.
type step struct {
	name string
	run  func(ctx context.Context, a *Actor, p *pass) (done bool, err error)
}
