// Package adapter knows how to copy a job of one kind to a worker and how to
// mirror its status back. There is one Adapter interface and one
// implementation, over unstructured objects, for every kind: a TrainJob is
// the generic job with TrainJob's spec rules added (see trainjob.go), so the
// copy rules live in one place.
package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"maps"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Kueue's marker telling a worker's Kueue to adopt an existing Workload
// instead of creating one for the job.
const (
	PrebuiltWorkloadLabel      = "kueue.x-k8s.io/prebuilt-workload-name"
	PrebuiltWorkloadAnnotation = "kueue.x-k8s.io/prebuilt-workload-name"
)

// Adapter copies jobs of one kind between clusters.
type Adapter interface {
	// GVK is the kind the adapter handles.
	GVK() schema.GroupVersionKind
	// DeletePropagation is how a deleted copy's dependents go: in the
	// foreground, so that the copy outlives its pods, unless the kind's
	// controller keeps making dependents for a copy being deleted.
	DeletePropagation() metav1.DeletionPropagation
	// Runner is, for a kind whose copies go in the background, the kind of
	// the dependent that runs a copy's pods, named as the copy and
	// controlled by it: a deleted copy counts until that is gone too.
	Runner() (schema.GroupVersionKind, bool)
	// PodLabel is the label whose value is a copy's name on every pod the
	// copy runs, through whichever dependents, or "" where the kind's pods
	// carry none Courier knows: a copy deleted in the background counts
	// until those pods have stopped.
	PodLabel() string
	// ManagedBy returns the dot-separated path of the kind's managedBy
	// field and the value that hands a manager-side job to Courier.
	ManagedBy() (path, value string)
	// Check returns a *Rejection when the manager's job cannot be
	// dispatched as it is.
	Check(job *unstructured.Unstructured) error
	// CheckDestination returns a *Rejection when the job, as it is, can
	// never go to the destination, and an *Unsuitable when the destination
	// is set up wrongly for jobs of this kind.
	CheckDestination(job *unstructured.Unstructured, to Destination) error
	// RemoteCopy builds the worker's copy of the manager's job.
	RemoteCopy(job *unstructured.Unstructured, to Destination) (*unstructured.Unstructured, error)
	// StatusPatch returns the JSON merge patch that makes local's status
	// mirror remote's, or nil when it already does.
	StatusPatch(local, remote *unstructured.Unstructured) ([]byte, error)
	// Outcome says whether a job's status shows it ended, and how.
	Outcome(job *unstructured.Unstructured) Outcome
	// Forward returns the update that brings the manager job's changes,
	// where the worker accepts them, to its copy, and sets back what was
	// edited on the worker by hand; with what it leaves, and why. A job
	// that cannot be copied at all is a *Rejection.
	Forward(local, remote *unstructured.Unstructured, to Destination) (Forwarding, error)
	// SpecChanged reports whether two versions of a job copy differ in what
	// Courier reads of their spec: the fields Forward compares, and the
	// copy's suspension.
	SpecChanged(old, cur *unstructured.Unstructured) bool
	// ClearActivityPatch returns the JSON merge patch that removes, from the
	// manager's job, the mirrored status saying it has active pods, or nil.
	// Kueue releases an evicted job's quota only once it is inactive, and a
	// worker that is gone will never report that.
	ClearActivityPatch(local *unstructured.Unstructured) ([]byte, error)
}

// Outcome is how a job ended, as its status says.
type Outcome struct {
	// Finished is set once the job ended.
	Finished bool
	// Failed is set when it ended in failure.
	Failed bool
	// Message is the ending condition's message.
	Message string
}

// Destination is where a job copy goes.
type Destination struct {
	// Workload names the Workload copy that adopts the job there.
	Workload string
	// Origin is Courier's origin label value.
	Origin string
	// RuntimePatch is the worker's own patch for TrainJobs, nil for none.
	RuntimePatch *trainer.TrainingRuntimeSpecPatch
}

// Rejection is a manager job that cannot be dispatched until its owner
// changes it; retrying does not help.
type Rejection struct {
	Message string
}

func (r *Rejection) Error() string { return r.Message }

// Unsuitable is a destination set up wrongly for a kind of job, such as a
// worker whose runtimePatch Trainer would refuse; a person must fix the
// destination.
type Unsuitable struct {
	Message string
}

func (u *Unsuitable) Error() string { return u.Message }

// Kind configures the one adapter implementation.
type Kind struct {
	GVK schema.GroupVersionKind
	// ManagedByPath is the dot-separated path of the managedBy field.
	ManagedByPath string
	// ManagedByValue is what the field must hold on the manager.
	ManagedByValue string
	// StatusFields are the status fields mirrored; empty means all.
	StatusFields []string
	// ForwardPaths are the dot-separated spec paths whose changes on the
	// manager are forwarded to a dispatched copy.
	ForwardPaths []string
}

// kindAdapter is the one Adapter implementation.
type kindAdapter struct {
	Kind
	// check and mutate add a kind's own rules to the shared ones.
	check  func(*unstructured.Unstructured) field.ErrorList
	mutate func(*unstructured.Unstructured, Destination) error
	// checkDestination reports what is wrong with a destination for the
	// kind (an *Unsuitable) or with the job for that destination (a
	// *Rejection), without building the copy.
	checkDestination func(*unstructured.Unstructured, Destination) error
	// statusIgnore are status fields that describe only the worker and are
	// never mirrored.
	statusIgnore []string
	// activity are the status fields that say the job has active pods.
	activity []string
	// fieldView, forwards, writable and setField add a kind's own rules to
	// Forward: how a top-level spec field is compared (nil drops it), the
	// spec fields forwarded besides ForwardPaths, why a field cannot be
	// written to a copy now, and how it is written (false: as a whole).
	fieldView func(field string, v any) any
	forwards  []string
	writable  func(field string, remote *unstructured.Unstructured) string
	setField  func(out, want *unstructured.Unstructured, field string) (bool, error)
	// unheld kinds are never deleted by their own controllers, so their
	// copies need no finalizer of Courier's to keep their final status
	// readable, and go with one delete.
	unheld bool
	// runner, when set, is the kind of the dependent that runs a job's
	// pods, for a kind whose controller keeps creating dependents of a job
	// being deleted, so that a delete in the foreground would not end.
	runner *schema.GroupVersionKind
	// podLabel names a copy's pods (see Adapter.PodLabel).
	podLabel string
	// verdicts remembers Check's answer for a job's generation: every pass
	// checks the job, and a kind's rules (a TrainJob's RuntimePatches,
	// decoded by reflection) cost more than the rest of the pass's reads.
	verdicts *lru.Cache
}

// verdictsSize bounds the jobs whose verdict is remembered; a job past it
// is only checked again.
const verdictsSize = 4096

// verdict is Check's answer for one generation of a job's spec.
type verdict struct {
	generation int64
	err        error
}

// New returns the generic adapter for a kind, with the rules of
// well-known kinds (batch/v1 Job) added.
func New(k Kind) Adapter {
	rules := kindRules[k.GVK]
	a := &kindAdapter{Kind: k, statusIgnore: rules.statusIgnore, activity: rules.activity, podLabel: rules.podLabel, verdicts: lru.New(verdictsSize)}
	if rules.mutate != nil {
		a.mutate = func(job *unstructured.Unstructured, _ Destination) error { return rules.mutate(job) }
	}
	return a
}

// GVK implements Adapter.
func (k *kindAdapter) GVK() schema.GroupVersionKind { return k.Kind.GVK }

// DeletePropagation implements Adapter.
func (k *kindAdapter) DeletePropagation() metav1.DeletionPropagation {
	if k.runner != nil {
		return metav1.DeletePropagationBackground
	}
	return metav1.DeletePropagationForeground
}

// Runner implements Adapter.
func (k *kindAdapter) Runner() (schema.GroupVersionKind, bool) {
	if k.runner == nil {
		return schema.GroupVersionKind{}, false
	}
	return *k.runner, true
}

// PodLabel implements Adapter.
func (k *kindAdapter) PodLabel() string { return k.podLabel }

func (k *kindAdapter) managedByPath() []string { return strings.Split(k.ManagedByPath, ".") }

// ManagedBy implements Adapter.
func (k *kindAdapter) ManagedBy() (path, value string) { return k.ManagedByPath, k.ManagedByValue }

// Check implements Adapter: the job must be managed by Courier's value, or
// the manager's own controller would run it too, and it must pass the
// kind's rules.
func (k *kindAdapter) Check(job *unstructured.Unstructured) error {
	// Both rules read only the spec, whose every change bumps the
	// generation; a job without a UID (not from an API server) is not
	// remembered.
	uid, generation := job.GetUID(), job.GetGeneration()
	if v, ok := k.verdicts.Get(uid); ok && v.(verdict).generation == generation {
		return v.(verdict).err
	}
	err := k.judge(job)
	if uid != "" {
		k.verdicts.Add(uid, verdict{generation: generation, err: err})
	}
	return err
}

// judge checks the job by the shared rules and the kind's.
func (k *kindAdapter) judge(job *unstructured.Unstructured) error {
	got, found, err := unstructured.NestedString(job.Object, k.managedByPath()...)
	if err != nil || !found || got != k.ManagedByValue {
		return &Rejection{Message: fmt.Sprintf("%s %s/%s has %s %q; set it to %q when creating the job, so that only the worker runs it.",
			k.Kind.GVK.Kind, job.GetNamespace(), job.GetName(), k.ManagedByPath, got, k.ManagedByValue)}
	}
	if k.check != nil {
		if errs := k.check(job); len(errs) > 0 {
			return &Rejection{Message: fmt.Sprintf("%s %s/%s would be refused by the worker: %v.",
				k.Kind.GVK.Kind, job.GetNamespace(), job.GetName(), errs.ToAggregate())}
		}
	}
	return nil
}

// CheckDestination implements Adapter. It runs for every candidate of
// every pass, so it never builds the copy.
func (k *kindAdapter) CheckDestination(job *unstructured.Unstructured, to Destination) error {
	if k.checkDestination == nil {
		return nil
	}
	return k.checkDestination(job, to)
}

// RemoteCopy implements Adapter. The copy has the job's name, namespace,
// labels and annotations, and a deep copy of its spec without managedBy, so
// that the worker's own controller runs it; no owner references, UID or
// resource version. It carries the origin label, the prebuilt-workload
// marker, the fingerprints of what it holds and, for kinds whose
// controllers may delete finished jobs, Courier's finalizer.
func (k *kindAdapter) RemoteCopy(job *unstructured.Unstructured, to Destination) (*unstructured.Unstructured, error) {
	workload := to.Workload
	out := CopyForWorker(job, to.Origin)
	labels, annotations := out.GetLabels(), out.GetAnnotations()
	if len(validation.IsValidLabelValue(workload)) == 0 {
		labels[PrebuiltWorkloadLabel] = workload
	} else {
		// A label value holds at most 63 characters.
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[PrebuiltWorkloadAnnotation] = workload
	}
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	if !k.unheld {
		// A TTL may delete a finished job before its status is mirrored
		// (kueue#14734).
		out.SetFinalizers([]string{courier.RemoteFinalizer})
	}
	unstructured.RemoveNestedField(out.Object, k.managedByPath()...)
	if k.mutate != nil {
		if err := k.mutate(out, to); err != nil {
			var rej *Rejection
			if errors.As(err, &rej) {
				return nil, err
			}
			return nil, fmt.Errorf("building the worker copy of %s %s/%s: %w", k.Kind.GVK.Kind, job.GetNamespace(), job.GetName(), err)
		}
	}
	// The fingerprints tell, later, a change on the manager from an edit
	// on the worker (see Forward).
	if err := stampHashes(out, hashes(k.view(out))); err != nil {
		return nil, err
	}
	return out, nil
}

// CopyForWorker is the copy rule every object Courier sends to a worker
// follows: the kind, name, namespace, labels and annotations, a deep copy of
// the spec, and the origin label; no owner references, UID, resource
// version or status.
func CopyForWorker(obj *unstructured.Unstructured, origin string) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	out.SetName(obj.GetName())
	out.SetNamespace(obj.GetNamespace())
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[courier.OriginLabel] = origin
	out.SetLabels(labels)
	out.SetAnnotations(maps.Clone(obj.GetAnnotations()))
	if spec, ok := obj.Object["spec"]; ok {
		out.Object["spec"] = runtime.DeepCopyJSONValue(spec)
	}
	return out
}

// StatusPatch implements Adapter. The manager's status becomes the
// worker's, field by field and down to nested keys: what the worker no
// longer has is removed on the manager too.
func (k *kindAdapter) StatusPatch(local, remote *unstructured.Unstructured) ([]byte, error) {
	remoteStatus := nestedMapNoCopy(remote.Object, "status")
	localStatus := nestedMapNoCopy(local.Object, "status")
	desired := map[string]any{}
	if len(k.StatusFields) == 0 {
		for f, v := range remoteStatus {
			desired[f] = v
		}
	} else {
		for f, v := range localStatus {
			desired[f] = v
		}
		for _, f := range k.StatusFields {
			if v, ok := remoteStatus[f]; ok {
				desired[f] = v
			} else {
				delete(desired, f)
			}
		}
	}
	for _, f := range k.statusIgnore {
		if v, ok := localStatus[f]; ok {
			desired[f] = v
		} else {
			delete(desired, f)
		}
	}
	return statusMergePatch(localStatus, desired, k.activity)
}

// Conditions that end a job, in the spellings of the common job kinds:
// batch Job and TrainJob say Complete, JobSet Completed, others Succeeded;
// all say Failed.
var (
	succeededConditions = []string{"Complete", "Completed", "Succeeded"}
	failedConditions    = []string{"Failed"}
)

// Outcome implements Adapter.
func (k *kindAdapter) Outcome(job *unstructured.Unstructured) Outcome {
	for m := range conditions(job) {
		if m["status"] != "True" {
			continue
		}
		t, _ := m["type"].(string)
		msg, _ := m["message"].(string)
		switch {
		case slices.Contains(failedConditions, t):
			return Outcome{Finished: true, Failed: true, Message: msg}
		case slices.Contains(succeededConditions, t):
			return Outcome{Finished: true, Message: msg}
		}
	}
	return Outcome{}
}

// ClearActivityPatch implements Adapter. A job whose status says it ended
// has no pods left, and its mirrored status is the final one: clearing it
// would lose the job counts its owner reads, and Kueue needs nothing of it.
func (k *kindAdapter) ClearActivityPatch(local *unstructured.Unstructured) ([]byte, error) {
	if k.Outcome(local).Finished {
		return nil, nil
	}
	status := nestedMapNoCopy(local.Object, "status")
	desired := maps.Clone(status)
	for _, f := range k.activity {
		delete(desired, f)
	}
	return statusMergePatch(status, desired, nil)
}

// nestedMapNoCopy is the map at fields in obj, or nil, shared with obj:
// for reading only. unstructured.NestedMap copies it whole, which every
// pass would pay for each job and copy it compares.
func nestedMapNoCopy(obj map[string]any, fields ...string) map[string]any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	m, _ := v.(map[string]any)
	return m
}

// statusMergePatch returns the JSON merge patch that turns status from into
// to, or nil if they are equal. An empty status is removed rather than left
// as {}: CRDs such as Trainer's require a status to have a field.
//
// Each field of clear that to lacks is set to null even if from lacks it
// too. from may come from a cache that has not yet seen Courier's last
// mirror: an activity field written then, absent from from, would
// otherwise stay on the API server, and a finished job that still counts
// active pods is one the server refuses (batch Job's status validation),
// so its final status could not land.
func statusMergePatch(from, to map[string]any, clear []string) ([]byte, error) {
	if equality.Semantic.DeepEqual(from, to) || (len(from) == 0 && len(to) == 0) {
		return nil, nil
	}
	var status any // null: the status goes
	if len(to) > 0 {
		diff := mergeDiff(from, to)
		for _, f := range clear {
			if _, ok := to[f]; !ok {
				diff[f] = nil
			}
		}
		if len(diff) == 0 {
			return nil, nil
		}
		status = diff
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return nil, fmt.Errorf("encoding status patch: %w", err)
	}
	return patch, nil
}

// mergeDiff is the JSON merge patch (RFC 7386) that turns from into to,
// as a map: what differs, objects compared field by field, lists and
// values replaced whole, fields from has and to lacks set to null. Built
// from the maps, not by encoding both and diffing the encodings.
func mergeDiff(from, to map[string]any) map[string]any {
	diff := map[string]any{}
	for f, v := range to {
		old, ok := from[f]
		if !ok {
			diff[f] = v
			continue
		}
		om, oldIsMap := old.(map[string]any)
		vm, newIsMap := v.(map[string]any)
		switch {
		case oldIsMap && newIsMap:
			if d := mergeDiff(om, vm); len(d) > 0 {
				diff[f] = d
			}
		case !equality.Semantic.DeepEqual(old, v):
			diff[f] = v
		}
	}
	for f := range from {
		if _, ok := to[f]; !ok {
			diff[f] = nil
		}
	}
	return diff
}

// WorkloadName returns the prebuilt Workload a worker copy belongs to.
func WorkloadName(obj *unstructured.Unstructured) string {
	if name := obj.GetLabels()[PrebuiltWorkloadLabel]; name != "" {
		return name
	}
	return obj.GetAnnotations()[PrebuiltWorkloadAnnotation]
}
