package benchstack

import (
	"context"
	"fmt"
	"time"

	"github.com/courierdev/courier/tools/profiles"
)

// profileSlice is the length of each CPU profile of a phase.
const profileSlice = 10 * time.Second

// phaseProfiler takes Courier's CPU profiles through its pprof server at
// addr, into dir; a nil one takes none.
type phaseProfiler struct {
	addr, dir string
}

// phaseProfile is a phase's profiling under way.
type phaseProfile struct {
	stop  chan struct{}
	done  chan struct{}
	paths []string
	err   error
}

// start profiles Courier through the phase, in slices of profileSlice,
// until wait. Other systems are not profiled: MultiKueue runs in Kueue's
// process, whose profile would mix its admission in.
func (p *phaseProfiler) start(ctx context.Context, sys System, load Load) *phaseProfile {
	if p == nil || sys.Name != SystemCourier {
		return nil
	}
	pp := &phaseProfile{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pp.done)
		pp.paths, pp.err = profiles.CPUSlices(ctx, p.addr, p.dir, fmt.Sprintf("%s-%s", load.Name, sys.Name), profileSlice, pp.stop)
	}()
	return pp
}

// wait ends the profiling once the slice under way is saved, and records
// the slices in res. The last slice runs past the measured window by up
// to profileSlice.
func (pp *phaseProfile) wait(res *PhaseResult) error {
	if pp == nil {
		return nil
	}
	close(pp.stop)
	<-pp.done
	if pp.err != nil {
		return fmt.Errorf("profiling Courier: %w", pp.err)
	}
	res.Profiles = pp.paths
	return nil
}
