package adapter

import (
	batchv1 "k8s.io/api/batch/v1"
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

// kindRule is what a well-known kind adds to the generic adapter.
type kindRule struct {
	mutate       func(*unstructured.Unstructured) error
	statusIgnore []string
	activity     []string
	podLabel     string
}

// kindRules are the rules of well-known kinds.
var kindRules = map[schema.GroupVersionKind]kindRule{
	// uncountedTerminatedPods lists the worker's pod UIDs, which the Job
	// controller there is still counting: nothing the manager can hold.
	batchJobGVK: {mutate: dropGeneratedSelector, statusIgnore: []string{"uncountedTerminatedPods"}, activity: []string{"active", "ready", "terminating"},
		podLabel: batchv1.JobNameLabel},
}
