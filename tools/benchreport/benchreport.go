// Package benchreport holds what Courier's benchmarks report alike: verdicts
// against targets, latency percentiles, the measured binary's commit, and
// JSON results.
package benchreport

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"time"
)

// Verdict is one target checked against a benchmark's runs.
type Verdict struct {
	// Status is PASS, FAIL, or SKIP when no run measured what the target
	// needs.
	Status string `json:"status"`
	Target string `json:"target"`
	Detail string `json:"detail"`
}

// Check is PASS when ok, FAIL otherwise.
func Check(ok bool, target, detail string) Verdict {
	status := "FAIL"
	if ok {
		status = "PASS"
	}
	return Verdict{Status: status, Target: target, Detail: detail}
}

// Skip is a target no run measured.
func Skip(target, detail string) Verdict {
	return Verdict{Status: "SKIP", Target: target, Detail: detail}
}

// PrintVerdicts prints one line per verdict, under a heading.
func PrintVerdicts(out io.Writer, vs []Verdict) {
	fmt.Fprintln(out, "\nTargets:")
	for _, v := range vs {
		fmt.Fprintf(out, "%s  %s: %s\n", v.Status, v.Target, v.Detail)
	}
}

// Percentiles summarise durations, in seconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// PercentilesOf uses the nearest rank.
func PercentilesOf(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(q float64) float64 {
		return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)].Seconds()
	}
	return Percentiles{P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: s[len(s)-1].Seconds()}
}

func (p Percentiles) String() string {
	return fmt.Sprintf("p50 %.3f s  p95 %.3f s  p99 %.3f s  max %.3f s", p.P50, p.P95, p.P99, p.Max)
}

// BinaryVersion says which commit a Go binary was built from, and whether
// the tree had changes.
func BinaryVersion(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "version unknown: " + err.Error()
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return "no VCS information"
	}
	v := "commit " + rev[:min(12, len(rev))]
	if settings["vcs.modified"] == "true" {
		v += " with uncommitted changes"
	}
	return v
}

// WriteJSON writes v, indented, to path.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ProcessCPU is one process's CPU during a phase: seconds, its share of
// the machine (all cores), and of the stack's processes together.
type ProcessCPU struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpuSeconds"`
	Machine    float64 `json:"shareOfMachine"`
	Stack      float64 `json:"shareOfStack"`
}

// CPUShares turns the CPU seconds of each process over a window of wall
// seconds on cpus cores into shares, largest first.
func CPUShares(seconds map[string]float64, wall float64, cpus int) []ProcessCPU {
	var stack float64
	for _, s := range seconds {
		stack += s
	}
	out := make([]ProcessCPU, 0, len(seconds))
	for _, name := range slices.Sorted(maps.Keys(seconds)) {
		p := ProcessCPU{Name: name, CPUSeconds: seconds[name]}
		if wall > 0 && cpus > 0 {
			p.Machine = seconds[name] / (wall * float64(cpus))
		}
		if stack > 0 {
			p.Stack = seconds[name] / stack
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b ProcessCPU) int {
		switch {
		case a.CPUSeconds > b.CPUSeconds:
			return -1
		case a.CPUSeconds < b.CPUSeconds:
			return 1
		}
		return 0
	})
	return out
}
