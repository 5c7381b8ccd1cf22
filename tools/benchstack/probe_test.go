package benchstack

import (
	"context"
	"testing"
	"time"
)

func TestProbeOnceTimesItsOwnThread(t *testing.T) {
	cpu, wall, err := probeOnce()
	if err != nil {
		t.Fatal(err)
	}
	// The thread's CPU time cannot exceed the wall time it ran in by more
	// than the clocks' resolution, and hashing 128 MiB takes some.
	if cpu <= 0 || cpu > wall+10*time.Millisecond {
		t.Errorf("probeOnce() = CPU %v, wall %v; want 0 < CPU <= wall", cpu, wall)
	}
}

func TestProberSummarizesItsRuns(t *testing.T) {
	p := startProber(context.Background(), 10*time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for {
		p.mu.Lock()
		runs := len(p.cpu)
		p.mu.Unlock()
		if runs >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var m MachineCheck
	if err := p.stop(&m); err != nil {
		t.Fatal(err)
	}
	if m.PhaseProbeRuns < 3 || m.PhaseProbeCPUMs <= 0 || m.PhaseProbeWallMs < m.PhaseProbeCPUMs-10 {
		t.Errorf("after three runs or more, the check is %+v", m)
	}
}
