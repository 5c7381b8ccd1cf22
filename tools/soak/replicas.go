package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/courierdev/courier/tools/localcluster"
)

// acquiredLease is what client-go's leader election logs when a replica
// becomes the leader.
var acquiredLease = []byte("Successfully acquired lease")

// replicas are the Courier processes, two replicas with leader election.
type replicas struct {
	dir   string
	names []string
	mu    sync.Mutex
	// since is the size of each replica's log when its current incarnation
	// started: only what follows tells whether it leads.
	since map[string]int64
}

func newReplicas(dir string, names []string) *replicas {
	return &replicas{dir: dir, names: names, since: map[string]int64{}}
}

// logOf returns the log path of a recorded process.
func (r *replicas) logOf(name string) (string, error) {
	state, err := localcluster.LoadState(r.dir)
	if err != nil {
		return "", err
	}
	for _, p := range state.Processes {
		if p.Name == name {
			return p.Log, nil
		}
	}
	return "", fmt.Errorf("no process %q recorded in %s", name, r.dir)
}

// leader returns the replica whose current incarnation acquired the
// lease, or "" when none has (yet).
func (r *replicas) leader() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.names {
		path, err := r.logOf(name)
		if err != nil {
			return "", err
		}
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("reading the log of %s: %w", name, err)
		}
		_, err = f.Seek(r.since[name], io.SeekStart)
		var data []byte
		if err == nil {
			data, err = io.ReadAll(f)
		}
		_ = f.Close()
		if err != nil {
			return "", fmt.Errorf("reading the log of %s: %w", name, err)
		}
		if alive, _ := localcluster.Alive(r.dir, name); alive && bytes.Contains(data, acquiredLease) {
			return name, nil
		}
	}
	return "", nil
}

// killLeader kills the leading replica with SIGKILL, as a crash would, and
// starts it again after downFor; the other replica takes the lease over
// meanwhile.
func (r *replicas) killLeader(ctx context.Context) (string, error) {
	name, err := r.leader()
	if err != nil {
		return "", err
	}
	note := "killed the leader " + name
	if name == "" {
		name, note = r.names[0], "no replica held the lease yet; killed "+r.names[0]
	}
	if err := localcluster.KillProcess(r.dir, name, true); err != nil {
		return "", err
	}
	sleep(ctx, downFor)
	proc, err := r.restart(name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s with SIGKILL; restarted as PID %d after %s", note, proc.PID, downFor), nil
}

// restart starts a replica again; what it logs from now on tells whether
// it leads.
func (r *replicas) restart(name string) (*localcluster.Process, error) {
	path, err := r.logOf(name)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the log of %s: %w", name, err)
	}
	r.mu.Lock()
	r.since[name] = info.Size()
	r.mu.Unlock()
	return localcluster.RestartProcess(r.dir, name)
}

// revive starts again, as a kubelet restarts a pod, the replicas that
// exited: a leader that could not renew its lease while the manager's API
// server was down exits, as controller-runtime does.
func (r *replicas) revive() ([]string, error) {
	var started []string
	for _, name := range r.names {
		alive, err := localcluster.Alive(r.dir, name)
		if err != nil {
			return started, err
		}
		if alive {
			continue
		}
		if _, err := r.restart(name); err != nil {
			return started, err
		}
		started = append(started, name)
	}
	return started, nil
}

// stopAll kills every replica with SIGKILL, as the loss of Courier's whole
// Deployment would, and returns their names.
func (r *replicas) stopAll() ([]string, error) {
	for _, name := range r.names {
		if err := localcluster.KillProcess(r.dir, name, true); err != nil {
			return nil, err
		}
	}
	return r.names, nil
}

// startAll starts every replica that is not running.
func (r *replicas) startAll() error {
	_, err := r.revive()
	return err
}
