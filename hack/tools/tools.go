//go:build tools

// Package tools pins the commands built from this module.
package tools

import (
	_ "honnef.co/go/tools/cmd/staticcheck"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
