package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of Courier's API.
	GroupVersion = schema.GroupVersion{Group: "courier.dev", Version: "v1alpha1"}

	// SchemeBuilder registers Courier's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds Courier's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&WorkerCluster{}, &WorkerClusterList{},
		&DispatchPolicy{}, &DispatchPolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
