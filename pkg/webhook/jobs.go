package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/watchdecode"
)

// QueueNameLabel is Kueue's label naming a job's LocalQueue.
const QueueNameLabel = "kueue.x-k8s.io/queue-name"

// ownController is the managedBy value naming a kind's own controller. It
// counts as unset, as in Kueue's MultiKueue: the TrainJob CRD fills it in by
// default before any webhook sees the job, so it does not tell that the
// user chose it.
var ownController = map[schema.GroupKind]string{
	{Group: "trainer.kubeflow.org", Kind: "TrainJob"}: "trainer.kubeflow.org/trainjob-controller",
	{Group: "batch", Kind: "Job"}:                     "kubernetes.io/job-controller",
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:        "jobset.sigs.k8s.io/jobset-controller",
}

// jobDefaulter sets managedBy on new jobs that Courier will dispatch.
type jobDefaulter struct {
	reader           liveOnMiss
	adapters         []adapter.Adapter
	managerNamespace string
}

func (d *jobDefaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	gvk := schema.GroupVersionKind(req.Kind)
	a := d.adapterFor(gvk)
	if a == nil {
		// The configuration's rules name a kind Courier does not serve:
		// leave the job as it is rather than block it.
		return admission.Allowed(fmt.Sprintf("Courier does not dispatch %s", gvk.Kind))
	}
	// Managed fields are about half the bytes, and not read here; the
	// patch below names the one field it sets, so it needs no whole object.
	job := &unstructured.Unstructured{}
	if err := json.Unmarshal(watchdecode.WithoutManagedFields(req.Object.Raw), &job.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the %s: %w", gvk.Kind, err))
	}
	path, value := a.ManagedBy()
	fields := strings.Split(path, ".")
	if current, set, _ := unstructured.NestedFieldNoCopy(job.Object, fields...); set && current != ownController[gvk.GroupKind()] {
		return admission.Allowed("managedBy is set")
	}
	queue := job.GetLabels()[QueueNameLabel]
	if queue == "" {
		return admission.Allowed("no queue")
	}
	namespace := job.GetNamespace()
	if namespace == "" {
		namespace = req.Namespace
	}
	routed, err := d.routesToCourier(ctx, namespace, queue)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !routed {
		return admission.Allowed("the job's ClusterQueue has no Courier AdmissionCheck")
	}
	op, err := setPatch(job.Object, fields, value)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("setting %s on the %s: %w", path, gvk.Kind, err))
	}
	return admission.Patched("", op)
}

// pointerEscape escapes a key for a JSON pointer (RFC 6901).
var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// setPatch is the JSON patch operation that sets the field at path in obj
// to value: an add at the first of its objects obj lacks, holding the rest
// of the path, or at the field itself (an add replaces a member that is
// there). A step through a value that is not an object is an error, as
// unstructured.SetNestedField's.
func setPatch(obj map[string]any, path []string, value any) (jsonpatch.JsonPatchOperation, error) {
	pointer := ""
	at := obj
	for i, field := range path {
		pointer += "/" + pointerEscape.Replace(field)
		if i == len(path)-1 {
			break
		}
		next, ok := at[field]
		if !ok || next == nil {
			for j := len(path) - 1; j > i; j-- {
				value = map[string]any{path[j]: value}
			}
			return jsonpatch.NewOperation("add", pointer, value), nil
		}
		if at, ok = next.(map[string]any); !ok {
			return jsonpatch.JsonPatchOperation{}, fmt.Errorf("value cannot be set because %s is not a map", strings.Join(path[:i+1], "."))
		}
	}
	return jsonpatch.NewOperation("add", pointer, value), nil
}

func (d *jobDefaulter) adapterFor(gvk schema.GroupVersionKind) adapter.Adapter {
	for _, a := range d.adapters {
		if a.GVK() == gvk {
			return a
		}
	}
	return nil
}

// routesToCourier reports whether the LocalQueue feeds a ClusterQueue with a
// Courier AdmissionCheck. A missing LocalQueue or ClusterQueue routes
// nowhere: Kueue itself reports the job as inadmissible.
func (d *jobDefaulter) routesToCourier(ctx context.Context, namespace, queue string) (bool, error) {
	lq := &kueue.LocalQueue{}
	if err := d.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: queue}, lq); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading LocalQueue %s/%s: %w", namespace, queue, err)
	}
	cq := &kueue.ClusterQueue{}
	if err := d.reader.Get(ctx, types.NamespacedName{Name: string(lq.Spec.ClusterQueue)}, cq); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading ClusterQueue %s: %w", lq.Spec.ClusterQueue, err)
	}
	for _, name := range CheckNames(cq) {
		ac := &kueue.AdmissionCheck{}
		if err := d.reader.Get(ctx, types.NamespacedName{Name: name}, ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, fmt.Errorf("reading AdmissionCheck %s: %w", name, err)
		}
		if ac.Spec.ControllerName == courier.ControllerName {
			return true, nil
		}
	}
	return false, nil
}

// liveOnMiss reads from the cache, and from the API server when the cache
// does not have the object: a LocalQueue created just before its first job
// may not have reached the cache yet, and a job left without managedBy
// would be refused later, after Kueue reserved its quota.
type liveOnMiss struct {
	cached, live client.Reader
}

func (r liveOnMiss) Get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	err := r.cached.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return r.live.Get(ctx, key, obj)
	}
	return err
}

// CheckNames lists the AdmissionChecks a ClusterQueue applies.
func CheckNames(cq *kueue.ClusterQueue) []string {
	if cq.Spec.AdmissionChecksStrategy == nil {
		return nil
	}
	names := make([]string, 0, len(cq.Spec.AdmissionChecksStrategy.AdmissionChecks))
	for _, rule := range cq.Spec.AdmissionChecksStrategy.AdmissionChecks {
		names = append(names, string(rule.Name))
	}
	return names
}
