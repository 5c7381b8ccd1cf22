package dispatch

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/adapter"
)

// remoteChange queues a manager Workload for a change on a worker, or for
// a garbage-collection sweep: at once, or after a while.
type remoteChange struct {
	key   types.NamespacedName
	after time.Duration
}

// statusWait is how long the pass a worker's change brings may wait:
// statusMirrorDelay for a job copy's update that changed its status alone
// and did not end the job, and nothing for anything else. A starting job's
// status changes several times in a few seconds (pods created, running,
// ready); the workqueue folds the waiting passes for one Workload into
// one, which mirrors the latest status in one write. Everything a plan
// decides on (admissions and evictions, which come on Workload copies;
// creations, deletions and spec changes of job copies; a job's end) still
// comes at once.
func statusWait(old, cur client.Object, adapters map[schema.GroupKind]adapter.Adapter, delay time.Duration) time.Duration {
	if delay <= 0 || old == nil || specOrMetaChanged(old, cur) {
		return 0
	}
	job, ok := cur.(*unstructured.Unstructured)
	if !ok {
		return 0
	}
	a, ok := adapters[job.GroupVersionKind().GroupKind()]
	if !ok || a.Outcome(job).Finished {
		return 0
	}
	return delay
}

// specOrMetaChanged reports whether an update changed more than an
// object's status: its spec (a new generation), its deletion, labels,
// annotations, finalizers or owners.
func specOrMetaChanged(old, cur client.Object) bool {
	return specOrMetaChangedButFinalizers(old, cur) || finalizersChanged(old, cur)
}

// specOrMetaChangedButFinalizers is specOrMetaChanged, blind to finalizers.
func specOrMetaChangedButFinalizers(old, cur client.Object) bool {
	return old.GetGeneration() != cur.GetGeneration() || metaChanged(old, cur)
}

// metaChanged reports whether an update changed an object's deletion,
// labels, annotations or owners.
func metaChanged(old, cur client.Object) bool {
	return deletionOrAnnotationsChanged(old, cur) ||
		!equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels()) ||
		!equality.Semantic.DeepEqual(old.GetOwnerReferences(), cur.GetOwnerReferences())
}

func finalizersChanged(old, cur client.Object) bool {
	return !slices.Equal(old.GetFinalizers(), cur.GetFinalizers())
}

// deletionOrAnnotationsChanged reports whether an update changed an object's deletion or
// annotations.
func deletionOrAnnotationsChanged(old, cur client.Object) bool {
	return !equality.Semantic.DeepEqual(old.GetDeletionTimestamp(), cur.GetDeletionTimestamp()) ||
		!equality.Semantic.DeepEqual(old.GetAnnotations(), cur.GetAnnotations())
}
