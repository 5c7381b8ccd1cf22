package adapter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var batchJobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// Labels the API server derives from a Job's UID for its generated selector.
var jobUIDLabels = []string{"batch.kubernetes.io/controller-uid", "controller-uid"}

// dropGeneratedSelector removes what the manager's API server generated from
// the manager Job's UID: the selector and the matching template labels. The
// worker's API server generates its own; the manager's would be refused.
func dropGeneratedSelector(job *unstructured.Unstructured) error {
	if manual, _, _ := unstructured.NestedBool(job.Object, "spec", "manualSelector"); manual {
		return nil
	}
	unstructured.RemoveNestedField(job.Object, "spec", "selector")
	for _, l := range jobUIDLabels {
		unstructured.RemoveNestedField(job.Object, "spec", "template", "metadata", "labels", l)
	}
	return nil
}

// kindRules are the rules of well-known kinds that the generic adapter adds
// to the shared ones.
var kindRules = map[schema.GroupVersionKind]func(*unstructured.Unstructured) error{
	batchJobGVK: dropGeneratedSelector,
}
