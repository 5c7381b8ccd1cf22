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

// parseMachineCPU returns the busy and total CPU seconds of the machine
// from the text of /proc/stat: all but idle and iowait is busy.
func parseMachineCPU(data []byte) (busy, total float64, err error) {
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("parsing /proc/stat: first line %q", line)
	}
	var sum, idle uint64
	for i, s := range f[1:] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing /proc/stat: %w", err)
		}
		// guest and guest_nice are counted in user and nice already.
		if i >= 8 {
			break
		}
		sum += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return float64(sum-idle) / clockTicks, float64(sum) / clockTicks, nil
}

// machineCPU returns the machine's busy and total CPU seconds so far.
func machineCPU() (busy, total float64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc/stat: %w", err)
	}
	return parseMachineCPU(data)
}
