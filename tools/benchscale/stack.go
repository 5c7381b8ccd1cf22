package benchscale

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/courierdev/courier/tools/benchreport"
)

// The kinds of process stackCPU names besides the clusters' binaries:
// Courier, and this process, which plays Kueue.
const (
	courierKind = "courier"
	loadDriver  = "load driver"
)

// stackCPU returns the CPU time of every process of the environment, summed
// by kind: the API servers, etcds and controller managers by their command
// name, Courier (courierPID, 0 while none runs), and the load driver.
// Saying where the machine's time went tells a target the machine misses
// from one Courier misses.
func (r *runner) stackCPU(courierPID int) (map[string]time.Duration, error) {
	kinds := map[int]string{os.Getpid(): loadDriver}
	if courierPID != 0 {
		kinds[courierPID] = courierKind
	}
	for _, c := range r.env.Clusters() {
		for _, pid := range c.PIDs() {
			// The binary's name: the kernel's comm is cut at 15 bytes.
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil {
				return nil, fmt.Errorf("reading the command of PID %d: %w", pid, err)
			}
			bin, _, _ := strings.Cut(string(cmdline), "\x00")
			kinds[pid] = filepath.Base(bin)
		}
	}
	out := map[string]time.Duration{}
	for pid, kind := range kinds {
		s, err := readProc(pid)
		if err != nil {
			return nil, err
		}
		out[kind] += s.CPU
	}
	return out, nil
}

// stackShares is each kind's share of the machine, and of the stack, between
// two samples wall apart.
func stackShares(from, to map[string]time.Duration, wall time.Duration) []benchreport.ProcessCPU {
	seconds := make(map[string]float64, len(to))
	for kind, t := range to {
		seconds[kind] = (t - from[kind]).Seconds()
	}
	return benchreport.CPUShares(seconds, wall.Seconds(), runtime.NumCPU())
}

// stackLine says each kind's share of the machine, largest first.
func stackLine(stack []benchreport.ProcessCPU) string {
	parts := make([]string, 0, len(stack))
	for _, p := range stack {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", p.Name, 100*p.Machine))
	}
	return strings.Join(parts, ", ")
}
