package benchscale

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat. The kernel
// reports them in USER_HZ, which is 100 on every architecture Go runs on.
const userHZ = 100

// procSample is what /proc says of a process at one moment.
type procSample struct {
	// CPU is user plus system time since the process started.
	CPU time.Duration
	// RSS is the resident set; PeakRSS its high-water mark since the start
	// or the last resetPeakRSS.
	RSS, PeakRSS uint64
}

func readProc(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("reading CPU time of PID %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces; fields count from
	// after its closing parenthesis, where field 3 (state) comes first.
	i := strings.LastIndexByte(string(stat), ')')
	var fields []string
	if i >= 0 {
		fields = strings.Fields(string(stat[i+1:]))
	}
	if len(fields) < 13 {
		return s, fmt.Errorf("reading CPU time of PID %d: unexpected /proc/%d/stat %q", pid, pid, stat)
	}
	var ticks uint64
	for _, f := range fields[11:13] { // utime and stime, fields 14 and 15
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return s, fmt.Errorf("reading CPU time of PID %d: %w", pid, err)
		}
		ticks += n
	}
	s.CPU = time.Duration(ticks) * time.Second / userHZ

	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("reading memory of PID %d: %w", pid, err)
	}
	defer func() { _ = status.Close() }()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		var dst *uint64
		switch key {
		case "VmRSS":
			dst = &s.RSS
		case "VmHWM":
			dst = &s.PeakRSS
		default:
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("reading memory of PID %d: %s: %w", pid, key, err)
		}
		*dst = kb * 1024
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("reading memory of PID %d: %w", pid, err)
	}
	return s, nil
}

// resetPeakRSS sets the process's VmHWM back to its current RSS, so that
// the peak read later belongs to the phase that follows.
func resetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting peak RSS of PID %d: %w", pid, err)
	}
	return nil
}

// machineCPU is the machine's CPU time since boot, busy and in all, summed
// over every core, from /proc/stat.
type machineCPU struct {
	busy, total uint64
}

func readMachineCPU() (machineCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, fmt.Errorf("reading the machine's CPU time: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("reading the machine's CPU time: unexpected /proc/stat line %q", line)
	}
	var m machineCPU
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("reading the machine's CPU time: %w", err)
		}
		m.total += n
		if i != 3 && i != 4 { // idle and iowait
			m.busy += n
		}
	}
	return m, nil
}

// busyShare is the share of all cores that was busy between two samples.
func busyShare(from, to machineCPU) float64 {
	if to.total == from.total {
		return 0
	}
	return float64(to.busy-from.busy) / float64(to.total-from.total)
}
