// Package v1alpha1 holds Courier's configuration file API,
// config.courier.dev/v1alpha1 Configuration: the settings one Courier
// process reads at start. Defaults live in defaults.go and nowhere else.
//
// +kubebuilder:object:generate=true
// +groupName=config.courier.dev
package v1alpha1
