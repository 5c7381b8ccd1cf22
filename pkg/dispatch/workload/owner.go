package workload

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ControlledBy reports whether owner is obj's controller.
func ControlledBy(obj metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == owner
}

// Resource is a kind's resource name, as RBAC rules spell it.
func Resource(gvk schema.GroupVersionKind) string {
	p, _ := meta.UnsafeGuessKindToResource(gvk)
	return p.Resource
}
