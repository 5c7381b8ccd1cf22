package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ManagerKueueConfig is the manager Kueue's Configuration file with its
// client of the manager at qps requests a second and a burst of as many.
// qps 0 is the file Up wrote, which leaves Kueue's clientConnection
// default. Other values are written beside it, each time from that file as
// it is then, so that what the harness added to it (pprof) carries over.
func (e *Env) ManagerKueueConfig(qps int32) (string, error) {
	base := filepath.Join(e.Dir, e.Manager, kueuePeer.name, "config.yaml")
	if qps == 0 {
		return base, nil
	}
	data, err := os.ReadFile(base)
	if err != nil {
		return "", fmt.Errorf("reading the manager Kueue's Configuration: %w", err)
	}
	path := filepath.Join(filepath.Dir(base), fmt.Sprintf("config-client-qps%d.yaml", qps))
	data = append(data, fmt.Sprintf("clientConnection: {qps: %d, burst: %d}\n", qps, qps)...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the manager Kueue's Configuration at %d QPS: %w", qps, err)
	}
	return path, nil
}

// ManagerKueue is the manager's Kueue process as recorded now: the binary
// it runs is its first argument, and its Configuration its ConfigFile.
func (e *Env) ManagerKueue() (*Process, error) {
	state, err := LoadState(e.Dir)
	if err != nil {
		return nil, err
	}
	return state.process(KueueProcess)
}

// RunManagerKueue stops the manager's Kueue by PID and starts binary in
// its place from the Configuration file config, with the same kubeconfig
// and ports, and waits until it serves and MultiKueue is active again.
func (e *Env) RunManagerKueue(ctx context.Context, binary, config string) (*Process, error) {
	proc, err := e.respawn(ctx, KueueProcess, kueuePorts, withBinary(binary, config))
	if err != nil {
		return nil, err
	}
	mgr, err := e.Client(e.Manager)
	if err != nil {
		return nil, err
	}
	return proc, e.waitMultiKueueActive(ctx, mgr)
}
