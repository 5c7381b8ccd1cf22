package benchstack

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ), 100
// on every Linux this runs on.
const clockTicks = 100

// parseStatCPU returns the CPU time, user and system, in seconds, from the
// text of /proc/<pid>/stat.
func parseStatCPU(data []byte) (float64, error) {
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, where field 3 (state) starts.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("parsing /proc stat: no command name in %q", data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15, so 11 and 12 after state.
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc stat: %d fields after the command name", len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc stat: %w", err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// processCPU returns a process's CPU seconds so far.
func processCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of PID %d: %w", pid, err)
	}
	return parseStatCPU(data)
}

// parseStatusKiB returns a "Key:   123 kB" field of /proc/<pid>/status,
// in KiB.
func parseStatusKiB(data []byte, key string) (uint64, error) {
	for line := range strings.SplitSeq(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %w", key, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("parsing /proc status: no %s", key)
}

// processRSS returns a process's resident memory now, in KiB.
func processRSS(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the memory of PID %d: %w", pid, err)
	}
	return parseStatusKiB(data, "VmRSS")
}

// machineTimes are the machine's CPU seconds so far, of all cores: busy
// (all but idle and iowait), in total, and stolen, the time its
// hypervisor ran something else while the machine had work (counted busy
// too).
type machineTimes struct {
	Busy, Total, Steal float64
}

// since is what was spent from before to t: the busy and stolen shares.
func (t machineTimes) since(before machineTimes) (busy, steal float64) {
	total := t.Total - before.Total
	if total <= 0 {
		return 0, 0
	}
	return (t.Busy - before.Busy) / total, (t.Steal - before.Steal) / total
}

// parseMachineCPU returns the machine's CPU times from the text of
// /proc/stat.
func parseMachineCPU(data []byte) (machineTimes, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return machineTimes{}, fmt.Errorf("parsing /proc/stat: first line %q", line)
	}
	var sum, idle, steal uint64
	for i, s := range f[1:] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return machineTimes{}, fmt.Errorf("parsing /proc/stat: %w", err)
		}
		// guest and guest_nice are counted in user and nice already.
		if i >= 8 {
			break
		}
		sum += n
		switch i {
		case 3, 4:
			idle += n
		case 7:
			steal = n
		}
	}
	return machineTimes{Busy: float64(sum-idle) / clockTicks, Total: float64(sum) / clockTicks, Steal: float64(steal) / clockTicks}, nil
}

// machineCPU returns the machine's CPU times so far.
func machineCPU() (machineTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{}, fmt.Errorf("reading /proc/stat: %w", err)
	}
	return parseMachineCPU(data)
}
