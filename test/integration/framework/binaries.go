package framework

import (
	"fmt"
	"os"
	"path/filepath"
)

// AssetsEnv names the directory holding etcd, kube-apiserver and
// kube-controller-manager, as controller-runtime's envtest calls it. The
// Makefile sets it to bin/.
const AssetsEnv = "KUBEBUILDER_ASSETS"

type binaries struct {
	etcd, apiserver, controllerManager string
}

// findBinaries looks in $KUBEBUILDER_ASSETS, else in the repository's bin/.
func findBinaries(repoRoot string) (binaries, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		dir = filepath.Join(repoRoot, "bin")
	}
	b := binaries{
		etcd:              filepath.Join(dir, "etcd"),
		apiserver:         filepath.Join(dir, "kube-apiserver"),
		controllerManager: filepath.Join(dir, "kube-controller-manager"),
	}
	for _, path := range []string{b.etcd, b.apiserver, b.controllerManager} {
		if _, err := os.Stat(path); err != nil {
			return b, fmt.Errorf("finding test binary %s (run `make test-binaries` or set %s): %w", path, AssetsEnv, err)
		}
	}
	return b, nil
}
