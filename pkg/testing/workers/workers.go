// Package workers builds fake manager and worker clusters for the unit
// tests of the dispatcher's steps: clients over an in-memory store with
// the indexes the dispatcher reads by, and connections that serve Kueue
// Workloads and TrainJobs. Tests that need an API server's behaviour use
// test/integration instead.
package workers

import (
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
)

// Scheme knows the kinds on a manager and its workers.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(trainer.AddToScheme(s))
	utilruntime.Must(courier.AddToScheme(s))
	return s
}()

// FakeClient is a client over objs, with funcs intercepting its calls, and
// the indexes the dispatcher reads workers' informers by.
func FakeClient(funcs interceptor.Funcs, objs ...client.Object) client.Client {
	b := fake.NewClientBuilder().WithScheme(Scheme).
		WithStatusSubresource(&kueue.Workload{}, &trainer.TrainJob{}, &kueue.AdmissionCheck{}, &courier.WorkerCluster{}).
		WithObjects(objs...).WithInterceptorFuncs(funcs)
	trainJobs := &unstructured.Unstructured{}
	trainJobs.SetGroupVersionKind(adapter.NewTrainJob().GVK())
	for field, extract := range workload.Indexes() {
		b = b.WithIndex(&kueue.Workload{}, field, extract).WithIndex(trainJobs, field, extract)
	}
	return b.Build()
}

// Remotes are workers by name; each is connected.
type Remotes map[string]*cluster.Remote

// Get returns the named worker, or cluster.ErrNotConnected.
func (f Remotes) Get(name string) (*cluster.Remote, error) {
	if r := f[name]; r != nil {
		return r, nil
	}
	return nil, cluster.ErrNotConnected
}

// Names lists the workers.
func (f Remotes) Names() []string {
	var names []string
	for name := range f {
		names = append(names, name)
	}
	return names
}

// State is connected for a worker of the set, and unknown otherwise.
func (f Remotes) State(name string) (cluster.State, bool) {
	if f[name] != nil {
		return cluster.State{Connected: true}, true
	}
	return cluster.State{}, false
}

// New is a worker whose informers answer from informer and whose API
// server answers from api; they are the same unless a test wants the
// informer behind. It serves Kueue Workloads and TrainJobs.
func New(name string, informer, api client.Client) *cluster.Remote {
	return cluster.NewRemote(name, informer, api, workload.GVK, trainer.GroupVersion.WithKind(trainer.TrainJobKind))
}

// TrainJobCopy is Courier's copy, for the manager Workload trainjob-<name>,
// of job on a worker, with job's status.
func TrainJobCopy(t *testing.T, job *trainertesting.TrainJobWrapper) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	status := obj["status"]
	delete(obj, "status")
	copy, err := adapter.NewTrainJob().RemoteCopy(&unstructured.Unstructured{Object: obj}, adapter.Destination{Workload: "trainjob-" + job.Name, Origin: "courier"})
	if err != nil {
		t.Fatal(err)
	}
	if status != nil {
		copy.Object["status"] = status
	}
	return copy
}

// JobSetRead is how a worker's API server answers a read of a JobSet: the
// JobSet js-uid, of the name read, controlled by Controller and, when
// Deleting is set, being deleted with Finalizers; or Err.
type JobSetRead struct {
	Controller types.UID
	Deleting   *metav1.Time
	Finalizers []string
	Err        error
}

// Into answers a read of key into obj.
func (a JobSetRead) Into(key client.ObjectKey, obj client.Object) error {
	if a.Err != nil {
		return a.Err
	}
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	obj.SetUID("js-uid")
	obj.SetOwnerReferences([]metav1.OwnerReference{{Kind: "TrainJob", Name: key.Name, UID: a.Controller, Controller: ptr.To(true)}})
	obj.SetDeletionTimestamp(a.Deleting)
	obj.SetFinalizers(a.Finalizers)
	return nil
}
