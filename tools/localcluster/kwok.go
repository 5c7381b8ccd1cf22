package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// kwokctl runs kwokctl for one cluster with the environment's work
// directory and locally built binaries: nothing is downloaded.
type kwokctl struct {
	bin, dir string
}

func (k kwokctl) run(ctx context.Context, cluster string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(k.bin, "kwokctl"), append([]string{"--name", cluster}, args...)...)
	cmd.Env = append(os.Environ(),
		"KWOK_WORKDIR="+filepath.Join(k.dir, "kwok", cluster),
		"KWOK_KUBECTL_BINARY="+filepath.Join(k.bin, "kubectl"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kwokctl %v: %w: %s", args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// create starts a cluster from the local binaries and returns its
// kubeconfig, with the credentials embedded.
func (k kwokctl) create(ctx context.Context, cluster string, extraArgs ...string) ([]byte, error) {
	b := func(name string) string { return filepath.Join(k.bin, name) }
	args := append([]string{"create", "cluster",
		"--runtime", "binary",
		"--kube-apiserver-binary", b("kube-apiserver"),
		"--kube-controller-manager-binary", b("kube-controller-manager"),
		"--kube-scheduler-binary", b("kube-scheduler"),
		"--kwok-controller-binary", b("kwok"),
		"--etcd-binary", b("etcd"),
		// kwokctl would otherwise add a context to ~/.kube/config.
		"--kubeconfig", filepath.Join(k.dir, cluster+".kwokctl.kubeconfig"),
		"--wait", "120s",
	}, extraArgs...)
	if _, err := k.run(ctx, cluster, args...); err != nil {
		return nil, err
	}
	return k.run(ctx, cluster, "get", "kubeconfig")
}

// scaleGPUNodes gives the cluster n simulated nodes with gpus GPUs each.
func (k kwokctl) scaleGPUNodes(ctx context.Context, cluster string, n, gpus int) error {
	_, err := k.run(ctx, cluster, "scale", "node", "gpu", "--replicas", fmt.Sprint(n),
		"--param", `.allocatable.cpu="32"`, "--param", `.allocatable.memory="256Gi"`,
		"--param", fmt.Sprintf(`.allocatable["nvidia.com/gpu"]="%d"`, gpus))
	return err
}

// delete stops the processes kwokctl started for the cluster and removes
// its files.
func (k kwokctl) delete(ctx context.Context, cluster string) error {
	_, err := k.run(ctx, cluster, "delete", "cluster", "--kubeconfig", filepath.Join(k.dir, cluster+".kwokctl.kubeconfig"))
	return err
}

// stop stops the cluster's components, API server included, keeping its
// data, as a worker lost to the network would look.
func (k kwokctl) stop(ctx context.Context, cluster string) error {
	_, err := k.run(ctx, cluster, "stop", "cluster")
	return err
}

// start starts a stopped cluster again on the same address.
func (k kwokctl) start(ctx context.Context, cluster string) error {
	_, err := k.run(ctx, cluster, "start", "cluster", "--wait", "120s")
	return err
}
