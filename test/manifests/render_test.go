// Package manifests checks what Courier ships for installation: the Helm
// chart under every values variant, and config/ built with kustomize, by
// their rendered objects and by a server-side dry-run against
// kube-apiserver.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/courierdev/courier/test/integration/framework"
)

// manifest is a rendered install, in order.
type manifest []*unstructured.Unstructured

// ids names every object as "Kind name", sorted.
func (m manifest) ids() []string {
	ids := make([]string, 0, len(m))
	for _, obj := range m {
		ids = append(ids, obj.GetKind()+" "+obj.GetName())
	}
	return sortedIDs(ids)
}

func sortedIDs(ids []string) []string {
	slices.Sort(ids)
	return ids
}

// yamlUnmarshalStrict decodes YAML into a typed object, refusing unknown
// fields as Courier does.
func yamlUnmarshalStrict(data []byte, into any) error {
	return yaml.UnmarshalStrict(data, into)
}

func (m manifest) ofKind(kind string) manifest {
	var out manifest
	for _, obj := range m {
		if obj.GetKind() == kind {
			out = append(out, obj)
		}
	}
	return out
}

func (m manifest) find(kind, name string) *unstructured.Unstructured {
	for _, obj := range m {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

// as converts the only object of kind into a typed object.
func as[T any](t *testing.T, m manifest, kind string) *T {
	t.Helper()
	objs := m.ofKind(kind)
	if len(objs) != 1 {
		t.Fatalf("rendered %d objects of kind %s, want 1: %v", len(objs), kind, m.ids())
	}
	return convert[T](t, objs[0])
}

func convert[T any](t *testing.T, obj *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		t.Fatalf("converting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return out
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs one of the tools in bin/ from the repository root.
func run(root, tool string, args ...string) ([]byte, error) {
	return runIn(root, root, tool, args...)
}

// runIn runs one of the tools in tools/bin/ in dir.
func runIn(dir, tools, tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(tools, "bin", tool), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %v: %w: %s (make %s builds it)", tool, args, err, stderr.String(), filepath.Join("bin", tool))
	}
	return stdout.Bytes(), nil
}

// renderChart renders charts/courier as release in namespace with extra
// helm arguments.
func renderChart(root, release, namespace string, args ...string) (manifest, error) {
	out, err := run(root, "helm", append([]string{"template", release, "charts/courier", "--namespace", namespace}, args...)...)
	if err != nil {
		return nil, err
	}
	objs, err := framework.DecodeManifests(out)
	return manifest(objs), err
}

// buildKustomization builds a folder of config/ under root, with the
// tools of tools, the repository root, if given.
func buildKustomization(root, dir string, tools ...string) (manifest, error) {
	out, err := runIn(root, append(tools, root)[0], "kustomize", "build", dir)
	if err != nil {
		return nil, err
	}
	objs, err := framework.DecodeManifests(out)
	return manifest(objs), err
}

// buildDefaultWith builds config/default as a user would after running
// `kustomize edit` with each of edits in it: on a copy of config/ in dir,
// so that the tree stays as it is.
func buildDefaultWith(root, dir string, edits ...[]string) (manifest, error) {
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(filepath.Join(root, "config"))); err != nil {
		return nil, fmt.Errorf("copying config/: %w", err)
	}
	kustomize := filepath.Join(root, "bin", "kustomize")
	for _, edit := range edits {
		cmd := exec.Command(kustomize, append([]string{"edit"}, edit...)...)
		cmd.Dir = filepath.Join(dir, "config", "default")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kustomize edit %v: %w: %s", edit, err, out)
		}
	}
	return buildKustomization(dir, "config/default", root)
}

// buildWorkerWithManager builds, in tmp, a copy of config/worker with its
// with-manager component, as docs/fence.md tells a platform engineer to.
func buildWorkerWithManager(root, tmp string) (manifest, error) {
	dir := filepath.Join(tmp, "worker")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "config/worker"))); err != nil {
		return nil, fmt.Errorf("copying config/worker: %w", err)
	}
	k, err := os.OpenFile(filepath.Join(dir, "kustomization.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the copy's kustomization: %w", err)
	}
	_, err = k.WriteString("components:\n- with-manager\n")
	if err := errors.Join(err, k.Close()); err != nil {
		return nil, fmt.Errorf("adding the component: %w", err)
	}
	return buildKustomization(root, dir)
}
