// Package controllermanager builds Courier's controller-runtime manager from
// a Configuration: scheme, clients, probes, metrics and leader election.
// cmd/courier and the integration tests share it, so what the tests start is
// what runs in production.
package controllermanager

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// NewScheme returns a scheme with every type Courier reads or writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(courier.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(trainer.AddToScheme(s))
	utilruntime.Must(jobset.AddToScheme(s))
	utilruntime.Must(inventory.AddToScheme(s))
	return s
}
