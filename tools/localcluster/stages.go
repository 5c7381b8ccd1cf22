package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	trainertesting "github.com/courierdev/courier/pkg/testing/trainer"
	"github.com/courierdev/courier/test/integration/framework"
)

// defaultStages are the kwok Stages kwokctl installs when given none, as
// files of the kwok module: giving kwokctl any Stage replaces all of them.
// The node heartbeat is the lease variant, kwokctl's choice for the binary
// runtime.
var defaultStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// singleInstanceControllers turns leader election off in each cluster's one
// kube-controller-manager and kube-scheduler. With it on, an API server down
// for longer than the lease's renew deadline (a fault the soak injects) makes
// them exit, and with no kubelet to restart them the worker has no garbage
// collector, Job controller or scheduler for the rest of the run.
const singleInstanceControllers = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
componentsPatches:
- name: kube-controller-manager
  extraArgs:
  - key: leader-elect
    value: "false"
- name: kube-scheduler
  extraArgs:
  - key: leader-elect
    value: "false"
`

// writeStages writes a kwok configuration of kwokctl's default Stages, the
// fast pod-complete made to wait for the duration in the pod annotation
// trainertesting.RunForAnnotation, so that a spec can keep pods running
// for a while; pods without it complete at once, as by default; and
// singleInstanceControllers. It returns
// the file's path, for kwokctl's --config.
func writeStages(dir string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	// kwok is a tool dependency: its module is hack/tools'.
	mods, err := framework.ModuleDirs(filepath.Join(root, "hack", "tools"), "sigs.k8s.io/kwok")
	if err != nil {
		return "", err
	}
	docs := make([]string, 0, len(defaultStages))
	for _, f := range defaultStages {
		data, err := os.ReadFile(filepath.Join(mods["sigs.k8s.io/kwok"], f))
		if err != nil {
			return "", fmt.Errorf("reading kwok's stage %s: %w", f, err)
		}
		if filepath.Base(f) == "pod-complete.yaml" {
			if data, err = withDelayFrom(data, trainertesting.RunForAnnotation); err != nil {
				return "", fmt.Errorf("kwok's stage %s: %w", f, err)
			}
		}
		docs = append(docs, string(data))
	}
	docs = append(docs, singleInstanceControllers)
	path := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
		return "", fmt.Errorf("writing kwok's stages: %w", err)
	}
	return path, nil
}

// withDelayFrom gives a Stage a delay read from a pod annotation, a Go
// duration such as "20s"; none without it.
func withDelayFrom(stage []byte, annotation string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no spec")
	}
	if _, ok := spec["delay"]; ok {
		return nil, fmt.Errorf("it has a delay already; revisit writeStages")
	}
	spec["delay"] = map[string]any{
		"durationMilliseconds": 0,
		"durationFrom":         map[string]any{"expressionFrom": fmt.Sprintf(".metadata.annotations[%q]", annotation)},
	}
	return yaml.Marshal(obj)
}
