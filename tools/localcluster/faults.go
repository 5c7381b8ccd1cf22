package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults the soak (tools/soak) injects into a running environment, each by
// PID: a cluster's API server paused, killed and started again, and a
// recorded process (a peer or a Courier replica) killed and started again.

// apiServerPID reads the PID kwokctl recorded for a cluster's API server.
func apiServerPID(dir, cluster string) (int, error) {
	return componentPID(dir, cluster, "kube-apiserver")
}

// pidPath is where kwokctl records the PID of one of a cluster's
// components.
func pidPath(dir, cluster, component string) string {
	return filepath.Join(dir, "kwok", cluster, "clusters", cluster, "pids", component+".pid")
}

// componentPID reads the PID kwokctl recorded for one of a cluster's
// components.
func componentPID(dir, cluster, component string) (int, error) {
	path := pidPath(dir, cluster, component)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading the %s PID of %s: %w", component, cluster, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("parsing the %s PID of %s (%s): %w", component, cluster, path, err)
	}
	return pid, nil
}

// ControllersDown names the controllers of a cluster that no longer run:
// kube-controller-manager and kube-scheduler exit when a paused API server
// keeps them from renewing their lease, at any time after it.
func ControllersDown(dir, cluster string) ([]string, error) {
	var down []string
	for _, c := range []string{"kube-controller-manager", "kube-scheduler"} {
		pid, err := componentPID(dir, cluster, c)
		if err != nil {
			return nil, err
		}
		if !(&Process{PID: pid}).alive() {
			down = append(down, c)
		}
	}
	return down, nil
}

// PeersDown names the recorded peer processes of a cluster (its Kueue,
// Trainer, JobSet, and fence) that exited, as "<cluster>/<peer>" for
// RestartProcess.
func PeersDown(dir, cluster string) ([]string, error) {
	state, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	var down []string
	for _, pr := range []string{kueuePeer.name, trainerPeer.name, jobsetPeer.name, fencePeer} {
		name := cluster + "/" + pr
		if p, err := state.process(name); err == nil && !p.alive() {
			down = append(down, name)
		}
	}
	return down, nil
}

// signalAPIServer sends sig to a cluster's API server.
func signalAPIServer(dir, cluster string, sig syscall.Signal) (int, error) {
	pid, err := apiServerPID(dir, cluster)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return pid, fmt.Errorf("sending %s to the kube-apiserver of %s (PID %d): %w", sig, cluster, pid, err)
	}
	return pid, nil
}

// PauseAPIServer stops a cluster's API server with SIGSTOP: its sockets stay
// open and nothing answers, as a worker behind a dead network link.
func PauseAPIServer(dir, cluster string) error {
	_, err := signalAPIServer(dir, cluster, syscall.SIGSTOP)
	return err
}

// ResumeAPIServer continues an API server PauseAPIServer stopped. The
// cluster's kube-controller-manager and kube-scheduler may have exited
// meanwhile, unable to renew their leader lease: StartCluster starts them
// again, as a kubelet restarts its static pods.
func ResumeAPIServer(dir, cluster string) error {
	_, err := signalAPIServer(dir, cluster, syscall.SIGCONT)
	return err
}

// KillAPIServer kills a cluster's API server with SIGKILL and waits until
// it is gone; etcd and the cluster's controllers keep running. StartCluster
// starts it again. Its PID file goes too: kwokctl starts no component
// whose recorded PID answers a signal, which a zombie not yet reaped, or
// another process given the PID since, does, and it would then wait two
// minutes for an API server it never started.
func KillAPIServer(dir, cluster string) error {
	pid, err := signalAPIServer(dir, cluster, syscall.SIGKILL)
	if err != nil {
		return err
	}
	if err := waitGone(&Process{Name: cluster + "/kube-apiserver", PID: pid}, 10*time.Second); err != nil {
		return err
	}
	if err := os.Remove(pidPath(dir, cluster, "kube-apiserver")); err != nil {
		return fmt.Errorf("removing the PID file of the kube-apiserver of %s: %w", cluster, err)
	}
	return nil
}

// waitGone waits until a killed process is gone.
func waitGone(p *Process, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for p.alive() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (PID %d) still runs %s after SIGKILL", p.Name, p.PID, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// KillProcess kills a recorded process by PID: with SIGKILL, as a crash,
// when kill is set; else with SIGTERM, then SIGKILL after 10s. It stays
// recorded, for RestartProcess.
func KillProcess(dir, name string, kill bool) error {
	state, err := LoadState(dir)
	if err != nil {
		return err
	}
	p, err := state.process(name)
	if err != nil {
		return err
	}
	if !kill {
		return p.stop(10 * time.Second)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (PID %d): %w", p.Name, p.PID, err)
	}
	return waitGone(p, 10*time.Second)
}

// RestartProcess starts a recorded process that KillProcess stopped again,
// with the same command line and environment, its log appended to, and
// records its new PID.
func RestartProcess(dir, name string) (*Process, error) {
	state, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	old, err := state.process(name)
	if err != nil {
		return nil, err
	}
	if old.alive() {
		return nil, fmt.Errorf("restarting %s: PID %d still runs", name, old.PID)
	}
	p, err := spawn(name, old.Log, os.O_APPEND, old.Env, old.Args...)
	if err != nil {
		return nil, err
	}
	*old = *p
	return p, state.save(dir)
}

// Alive reports whether the recorded process name runs.
func Alive(dir, name string) (bool, error) {
	state, err := LoadState(dir)
	if err != nil {
		return false, err
	}
	p, err := state.process(name)
	if err != nil {
		return false, err
	}
	return p.alive(), nil
}

func (s *State) process(name string) (*Process, error) {
	for _, p := range s.Processes {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no process %q is recorded in the environment's state", name)
}
