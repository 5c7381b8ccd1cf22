package act

import (
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/pkg/testing/workers"
)

const ns = "team-a"

var (
	t0  = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

// newActor is an actor on the workers, for TrainJobs, its clock at now.
func newActor(remotes workers.Remotes) *Actor {
	a := adapter.NewTrainJob()
	return &Actor{Client: workers.FakeClient(interceptor.Funcs{}), Remotes: remotes, Expectations: expect.New(),
		Recorder: events.NewFakeRecorder(100), Adapters: adapterMap(a), AdapterList: []adapter.Adapter{a},
		Origin: "courier", Now: func() time.Time { return now }}
}

func trainJob() *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob("tj", ns).UID("tj-uid").ManagedBy(adapter.TrainJobManagedBy)
}

func adapterMap(as ...adapter.Adapter) map[schema.GroupKind]adapter.Adapter {
	m := map[schema.GroupKind]adapter.Adapter{}
	for _, a := range as {
		m[a.GVK().GroupKind()] = a
	}
	return m
}
