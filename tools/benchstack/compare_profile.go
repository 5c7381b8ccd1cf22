package benchstack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/courierdev/courier/tools/localcluster"
	"github.com/courierdev/courier/tools/profiles"
)

// profileSlice is the length of each CPU profile of a phase.
const profileSlice = 10 * time.Second

// phaseProfiler takes CPU profiles of Courier, the manager's Kueue and the
// manager's API server through their pprof servers, by process, into dir;
// a nil one takes none. All three run in every phase of every system, so
// all are profiled in every phase: profiling costs every system alike.
type phaseProfiler struct {
	servers map[string]profiles.Server
	dir     string
}

// apiServerProcess names the manager API server's profiles.
const apiServerProcess = "kube-apiserver"

// profileAPIServer adds the manager's API server to what p profiles, through
// the harness's own credentials there.
func (p *phaseProfiler) profileAPIServer(env *localcluster.Env) error {
	cfg, err := env.RESTConfig(env.Manager)
	if err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building a client for the manager API server's pprof: %w", err)
	}
	client.Timeout = profiles.RequestTimeout
	p.servers[apiServerProcess] = profiles.Server{Base: cfg.Host, Client: client}
	return nil
}

// phaseProfile is a phase's profiling under way.
type phaseProfile struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	paths []string
	errs  []error
}

// profilePrefix names a phase's profiles of one process.
func profilePrefix(load Load, repeat int, sys System, process string) string {
	return fmt.Sprintf("%s-r%d-%s-%s", load.Name, repeat+1, sys.Name, path.Base(process))
}

// start profiles every process through the phase, in slices of
// profileSlice, until wait.
func (p *phaseProfiler) start(ctx context.Context, sys System, load Load, repeat int) *phaseProfile {
	if p == nil {
		return nil
	}
	pp := &phaseProfile{stop: make(chan struct{}), done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, process := range slices.Sorted(maps.Keys(p.servers)) {
		wg.Go(func() {
			paths, err := profiles.CPUSlices(ctx, p.servers[process], p.dir, profilePrefix(load, repeat, sys, process), profileSlice, pp.stop)
			pp.mu.Lock()
			defer pp.mu.Unlock()
			pp.paths = append(pp.paths, paths...)
			if err != nil {
				pp.errs = append(pp.errs, fmt.Errorf("profiling %s: %w", process, err))
			}
		})
	}
	go func() {
		wg.Wait()
		close(pp.done)
	}()
	return pp
}

// wait ends the profiling once the slices under way are saved, and
// records them in res. The last slice runs past the measured window by up
// to profileSlice.
func (pp *phaseProfile) wait(res *PhaseResult) error {
	if pp == nil {
		return nil
	}
	close(pp.stop)
	<-pp.done
	if err := errors.Join(pp.errs...); err != nil {
		return err
	}
	slices.Sort(pp.paths)
	res.Profiles = pp.paths
	return nil
}

// servePprofFromKueue has the manager's Kueue serve pprof at addr: its
// Configuration gains pprofBindAddress, and it is restarted, by PID, with
// the binary it runs now. Every later restart keeps the Configuration.
func servePprofFromKueue(ctx context.Context, env *localcluster.Env, addr string) error {
	kueue, err := env.ManagerKueue()
	if err != nil {
		return err
	}
	config := kueue.ConfigFile()
	if config == "" {
		return fmt.Errorf("finding the manager Kueue's Configuration in %s's state", env.Dir)
	}
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("opening the manager Kueue's Configuration: %w", err)
	}
	if _, err := fmt.Fprintf(f, "pprofBindAddress: %q\n", addr); err != nil {
		_ = f.Close()
		return fmt.Errorf("adding pprof to the manager Kueue's Configuration: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("adding pprof to the manager Kueue's Configuration: %w", err)
	}
	if _, err := env.RestartManagerKueue(ctx, kueue.Args[0]); err != nil {
		return fmt.Errorf("restarting the manager's Kueue with pprof: %w", err)
	}
	return nil
}
