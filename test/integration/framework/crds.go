package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Where each peer project keeps its CRDs inside its module.
var foreignCRDDirs = map[string]string{
	"sigs.k8s.io/kueue":              "config/components/crd/bases",
	"github.com/kubeflow/trainer/v2": "manifests/base/crds",
	"sigs.k8s.io/jobset":             "config/components/crd/bases",
	// ClusterProfile and PlacementDecision.
	"sigs.k8s.io/cluster-inventory-api": "config/crd/bases",
}

// CRDDirs returns Courier's CRD folder and those of the peers, read from
// the module cache at the versions go.mod pins.
func CRDDirs(repoRoot string) ([]string, error) {
	modules := make([]string, 0, len(foreignCRDDirs))
	for m := range foreignCRDDirs {
		modules = append(modules, m)
	}
	mods, err := ModuleDirs(repoRoot, modules...)
	if err != nil {
		return nil, err
	}
	dirs := []string{filepath.Join(repoRoot, "config", "crd", "bases")}
	for path, dir := range mods {
		dirs = append(dirs, filepath.Join(dir, foreignCRDDirs[path]))
	}
	return dirs, nil
}

// ModuleDirs maps module paths to their folders in the module cache, at the
// versions Courier's go.mod pins.
func ModuleDirs(repoRoot string, modules ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Dir}}"}, modules...)...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			err = fmt.Errorf("%w: %s", err, exitErr.Stderr)
		}
		return nil, fmt.Errorf("locating modules: %w", err)
	}
	dirs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, dir, ok := strings.Cut(sc.Text(), " ")
		if !ok || dir == "" {
			return nil, fmt.Errorf("module %s is not in the module cache; run `go mod download`", path)
		}
		dirs[path] = dir
	}
	return dirs, nil
}

// ReadCRDs decodes every CRD in the YAML files of dirs.
func ReadCRDs(dirs []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, fmt.Errorf("listing CRDs in %s: %w", dir, err)
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			fileCRDs, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			crds = append(crds, fileCRDs...)
		}
	}
	return crds, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := ReadManifests(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, crd, true); err != nil {
			return nil, fmt.Errorf("decoding CRD %s in %s: %w", obj.GetName(), path, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// InstallCRDs creates the CRDs on the cluster and waits until each is
// established.
func (c *Cluster) InstallCRDs(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := InstallCRDs(ctx, c.Client, crds); err != nil {
		return fmt.Errorf("installing CRDs on %s: %w", c.Name, err)
	}
	return nil
}

// InstallCRDs creates the CRDs through a client and waits until each is
// established.
func InstallCRDs(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		if err := c.Create(ctx, crd.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}
