package observe

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
)

// job returns the manager job that owns wl and its adapter. A nil job with
// a nil error means the job is gone. An owner of a kind Courier does not
// handle is an *adapter.Rejection.
func (ob *Observer) job(ctx context.Context, wl *kueue.Workload) (*unstructured.Unstructured, adapter.Adapter, error) {
	ref := metav1.GetControllerOf(wl)
	if ref == nil {
		return nil, nil, &adapter.Rejection{Message: fmt.Sprintf("Workload %s/%s has no owning job; Courier dispatches only jobs.", wl.Namespace, wl.Name)}
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil, &adapter.Rejection{Message: fmt.Sprintf("Workload %s/%s has an owner with an invalid apiVersion %q.", wl.Namespace, wl.Name, ref.APIVersion)}
	}
	a, ok := ob.Adapters[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	if !ok {
		return nil, nil, &adapter.Rejection{Message: fmt.Sprintf("Courier does not dispatch %s.%s; add %s.%s.%s to the configuration's externalFrameworks.",
			ref.Kind, gv.Group, ref.Kind, gv.Version, gv.Group)}
	}
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(a.GVK())
	if err := ob.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: ref.Name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, a, nil
		}
		return nil, nil, fmt.Errorf("getting %s: %w", a.GVK().Kind, err)
	}
	if job.GetUID() != ref.UID {
		return nil, a, nil
	}
	return job, a, nil
}

// dependencies reads the PodGroups a job's pods name, and the core
// Workloads those take their templates from, from the manager. A missing
// one, or a manager that does not serve the kind, is a message for the
// user, not an error.
func (ob *Observer) dependencies(ctx context.Context, job *unstructured.Unstructured) ([]*unstructured.Unstructured, string, error) {
	var deps []*unstructured.Unstructured
	get := func(gvk schema.GroupVersionKind, name, why string) (*unstructured.Unstructured, string, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := ob.Client.Get(ctx, client.ObjectKey{Namespace: job.GetNamespace(), Name: name}, obj)
		switch {
		case err == nil:
			return obj, "", nil
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("%s %s/%s, which %s, does not exist on the manager; create it there.", gvk.Kind, job.GetNamespace(), name, why), nil
		case meta.IsNoMatchError(err):
			return nil, fmt.Sprintf("The manager does not serve %s, which %s; enable the scheduling.k8s.io/v1alpha2 API there.", cluster.KindName(gvk), why), nil
		default:
			return nil, "", fmt.Errorf("getting %s: %w", gvk.Kind, err)
		}
	}
	for _, name := range adapter.PodGroupNames(job) {
		pg, msg, err := get(adapter.PodGroupGVK, name, "the job's pods name")
		if pg == nil {
			return nil, msg, err
		}
		deps = append(deps, pg)
		if wlName := adapter.TemplateWorkloadName(pg); wlName != "" {
			w, msg, err := get(adapter.SchedulingWorkloadGVK, wlName, "PodGroup "+name+" takes its template from")
			if w == nil {
				return nil, msg, err
			}
			deps = append(deps, w)
		}
	}
	return deps, "", nil
}
