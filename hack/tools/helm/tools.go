//go:build tools

// Package tools pins Helm, which renders and installs Courier's chart. It
// is a module of its own because Helm follows a newer Kubernetes client
// than the one the other tools are pinned to.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
