//go:build tools

// Package tools pins kustomize, which builds config/default. It is a module
// of its own so that kustomize's dependencies never move the versions the
// other tools are pinned to.
package tools

import (
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
