package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Options shape an Environment.
type Options struct {
	// Workers is the number of worker clusters.
	Workers int
	// Dir holds the clusters' files; empty means a new temporary directory,
	// removed by Stop.
	Dir string
	// APIServerArgs are added to every kube-apiserver's flags, for example
	// --runtime-config to enable an alpha API.
	APIServerArgs []string
	// ClusterAPIServerArgs are added, after APIServerArgs, to the flags of
	// the named cluster's kube-apiserver ("manager", "worker-1", ...).
	ClusterAPIServerArgs map[string][]string
	// CRDDirs are more folders of CRDs to install on every cluster,
	// relative to the repository root.
	CRDDirs []string
}

// Environment is one manager cluster and its workers.
type Environment struct {
	Manager *Cluster
	Workers []*Cluster

	// RepoRoot is the root of the Courier repository.
	RepoRoot string

	dir       string
	removeDir bool
}

// Start builds the clusters and starts them all in parallel, each with the
// CRDs installed. On error, every process already started is stopped.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bins, err := findBinaries(root)
	if err != nil {
		return nil, err
	}
	dirs, err := CRDDirs(root)
	if err != nil {
		return nil, err
	}
	for _, d := range opts.CRDDirs {
		dirs = append(dirs, filepath.Join(root, d))
	}
	crds, err := ReadCRDs(dirs)
	if err != nil {
		return nil, err
	}
	env := &Environment{RepoRoot: root, dir: opts.Dir}
	if env.dir == "" {
		if env.dir, err = os.MkdirTemp("", "courier-integration-"); err != nil {
			return nil, fmt.Errorf("creating environment directory: %w", err)
		}
		env.removeDir = true
	}
	names := []string{"manager"}
	for i := range opts.Workers {
		names = append(names, fmt.Sprintf("worker-%d", i+1))
	}
	clusters := make([]*Cluster, len(names))
	for i, name := range names {
		args := append(slices.Clone(opts.APIServerArgs), opts.ClusterAPIServerArgs[name]...)
		if clusters[i], err = newCluster(name, filepath.Join(env.dir, name), bins, args); err != nil {
			return nil, errors.Join(err, env.cleanUp())
		}
	}
	env.Manager, env.Workers = clusters[0], clusters[1:]

	g, gctx := errgroup.WithContext(ctx)
	for i := range clusters {
		g.Go(func() error {
			if err := env.startCluster(gctx, clusters, i, bins); err != nil {
				return err
			}
			return clusters[i].InstallCRDs(gctx, crds)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return env, nil
}

// portAttempts bounds how often a cluster is started again on new ports.
const portAttempts = 3

// startCluster starts clusters[i], again on new ports when one of its
// processes lost a port to another process: test packages run in parallel,
// and a port free when FreePorts returned it can be taken before etcd or
// the API server binds it.
func (e *Environment) startCluster(ctx context.Context, clusters []*Cluster, i int, bins binaries) error {
	for attempt := 1; ; attempt++ {
		c := clusters[i]
		err := c.start(ctx)
		if err == nil || attempt == portAttempts || !c.lostPort() {
			return err
		}
		if err := c.stop(); err != nil {
			return err
		}
		next, err := newCluster(c.Name, filepath.Join(e.dir, fmt.Sprintf("%s-attempt-%d", c.Name, attempt+1)), bins, c.extraAPIServerArgs)
		if err != nil {
			return err
		}
		clusters[i] = next
		if i == 0 {
			e.Manager = next
		} else {
			e.Workers[i-1] = next
		}
	}
}

// Clusters returns the manager followed by the workers.
func (e *Environment) Clusters() []*Cluster {
	return append([]*Cluster{e.Manager}, e.Workers...)
}

// NamespaceEverywhere creates a namespace named from prefix on the manager
// and the same one on every worker, as a platform team would.
func (e *Environment) NamespaceEverywhere(ctx context.Context, prefix string) (string, error) {
	ns, err := e.Manager.CreateNamespace(ctx, prefix)
	if err != nil {
		return "", err
	}
	for _, w := range e.Workers {
		if err := w.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}); err != nil {
			return "", fmt.Errorf("creating namespace %s on %s: %w", ns.Name, w.Name, err)
		}
	}
	return ns.Name, nil
}

// Stop stops every process of every cluster by PID, in parallel, and removes
// the temporary directory unless a process could not be stopped.
func (e *Environment) Stop() error {
	var g errgroup.Group
	for _, c := range e.Clusters() {
		if c != nil {
			g.Go(c.stop)
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("stopping clusters (files kept in %s): %w", e.dir, err)
	}
	return e.cleanUp()
}

func (e *Environment) cleanUp() error {
	if !e.removeDir {
		return nil
	}
	if err := os.RemoveAll(e.dir); err != nil {
		return fmt.Errorf("removing %s: %w", e.dir, err)
	}
	return nil
}

// RepoRoot is the directory of Courier's go.mod.
func RepoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("locating go.mod: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("locating go.mod: not inside Courier's module")
	}
	return filepath.Dir(gomod), nil
}
