package collector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courier "github.com/courierdev/courier/api/v1alpha1"
	testingbatch "github.com/courierdev/courier/pkg/testing/batch"
	testingkueue "github.com/courierdev/courier/pkg/testing/kueue"
)

func TestToCollect(t *testing.T) {
	known := map[types.NamespacedName]managerWorkload{
		{Namespace: "ns", Name: "placed"}:    {uid: "u1", clusters: []string{"worker-1"}},
		{Namespace: "ns", Name: "nominated"}: {uid: "u2", clusters: []string{"worker-1", "worker-2"}},
		{Namespace: "ns", Name: "finished"}:  {uid: "u3", clusters: []string{"worker-1"}, finished: true},
	}
	copyOf := func(name, uid string) client.Object {
		return testingkueue.MakeWorkload(name, "ns").Annotation(courier.ManagerUIDAnnotation, uid).Obj()
	}
	cases := map[string]struct {
		obj     client.Object
		cluster string
		leaving bool
		// want names the Workload the sweep queues, "" for none.
		want string
	}{
		"a copy where its Workload is placed":            {obj: copyOf("placed", "u1"), cluster: "worker-1"},
		"a copy on a nominated worker":                   {obj: copyOf("nominated", "u2"), cluster: "worker-2"},
		"a copy on a worker not chosen":                  {obj: copyOf("placed", "u1"), cluster: "worker-2", want: "placed"},
		"a copy of a finished Workload":                  {obj: copyOf("finished", "u3"), cluster: "worker-1", want: "finished"},
		"a copy of a Workload gone":                      {obj: copyOf("gone", "u4"), cluster: "worker-1", want: "gone"},
		"a copy of an earlier Workload of the same name": {obj: copyOf("placed", "u0"), cluster: "worker-1", want: "placed"},
		"a job copy labelled for a finished Workload": {
			obj:     testingbatch.MakeJob("job", "ns").Label(courier.WorkloadLabel, "finished").Obj(),
			cluster: "worker-1", want: "finished",
		},
		"an object naming no Workload": {obj: testingbatch.MakeJob("job", "ns").Obj(), cluster: "worker-1"},
		"a copy of a finished Workload that Courier is deleting already": {
			obj: copyOf("finished", "u3"), cluster: "worker-1", leaving: true,
		},
		"a copy Courier is deleting although it belongs where it is": {
			obj: copyOf("placed", "u1"), cluster: "worker-1", leaving: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &Collector{Leaving: func(client.Object) bool { return tc.leaving }}
			key, queued := c.toCollect(tc.obj, tc.cluster, known)
			got := ""
			if queued {
				got = key.Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("toCollect() queued (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToCollectWithoutLeaving(t *testing.T) {
	c := &Collector{}
	key, got := c.toCollect(testingkueue.MakeWorkload("gone", "ns").Obj(), "worker-1", nil)
	if want := (types.NamespacedName{Namespace: "ns", Name: "gone"}); !got || key != want {
		t.Errorf("toCollect() = %v, %v; want %v, true", key, got, want)
	}
}
