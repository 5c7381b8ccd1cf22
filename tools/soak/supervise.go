package soak

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/courierdev/courier/tools/localcluster"
)

// superviseControllers starts again, as a kubelet restarts its pods, the
// controllers of a cluster that exited after a pause, the peers that
// exited, and Courier's replicas that exited, whenever no fault holds them.
// Without it a worker whose controllers exit a while after its API server
// came back runs no pod and collects no garbage until the faults are over,
// a Courier that lost its lease while the manager's API server was down
// stays down, and a Kueue that exited at startup leaves its worker without
// Kueue.
func (in *injector) superviseControllers(ctx context.Context, locks, peerLocks map[string]*sync.Mutex) {
	ticker := time.NewTicker(superviseEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		for _, c := range append([]string{in.env.Manager}, in.env.Workers...) {
			if l := peerLocks[c]; l.TryLock() {
				err := in.revivePeers(c)
				l.Unlock()
				if err != nil {
					in.logf("Supervising the peers of %s: %v", c, err)
				}
			}
			if l := locks[c]; l != nil && l.TryLock() { // Else a fault holds it and restores it.
				err := in.reviveControllers(c)
				l.Unlock()
				if err != nil {
					in.logf("Supervising the controllers of %s: %v", c, err)
				}
			}
		}
		if in.courierHeld.TryLock() {
			started, err := in.courier.revive()
			in.courierHeld.Unlock()
			if len(started) > 0 {
				in.logf("Starting %s again", strings.Join(started, " and "))
			}
			if err != nil {
				in.logf("Supervising Courier's replicas: %v", err)
			}
		}
	}
}

// revivePeers starts a cluster's peers (Kueue, Trainer, JobSet) again if
// they exited: one restarted while its API server was slow exits at
// startup, and a kubelet would start it again.
func (in *injector) revivePeers(cluster string) error {
	peers, err := localcluster.PeersDown(in.env.Dir, cluster)
	if err != nil {
		return err
	}
	for _, name := range peers {
		p, err := localcluster.RestartProcess(in.env.Dir, name)
		if err != nil {
			return err
		}
		in.logf("Starting %s again, as PID %d: it exited", name, p.PID)
	}
	return nil
}

// reviveControllers starts a cluster's controllers again if they exited.
func (in *injector) reviveControllers(cluster string) error {
	down, err := localcluster.ControllersDown(in.env.Dir, cluster)
	if err != nil || len(down) == 0 {
		return err
	}
	in.logf("Starting %s on %s again", strings.Join(down, " and "), cluster)
	ctx, cancel := restoreContext()
	defer cancel()
	return localcluster.StartCluster(ctx, in.env.Dir, in.env.Bin, cluster)
}
