// Package memlimit gives the Go runtime a soft memory limit below the
// container's, so that the garbage collector works harder as the heap
// nears the limit instead of the kernel killing the process at it.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the container's memory limit the Go runtime may
// use; the rest is headroom for what it does not count and for the page
// cache the kernel charges to the container.
const Share = 0.9

// unlimitedV1 is where cgroup v1 starts saying "no limit": it reports
// the largest page-aligned int64 (9223372036854771712), not a word.
const unlimitedV1 = int64(1) << 62

// FromCgroup sets the Go runtime's memory limit to Share of the memory
// limit of the cgroup mounted at root (/sys/fs/cgroup in a container), v2
// or v1. It sets nothing when GOMEMLIMIT is set, which the runtime has
// applied already, or when the cgroup has no limit. It returns the limit
// set, 0 if none, and a sentence saying why; an error only when a limit
// file exists and cannot be read or parsed.
func FromCgroup(root string) (int64, string, error) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, fmt.Sprintf("GOMEMLIMIT is set (%s)", v), nil
	}
	limit, file, err := cgroupLimit(root)
	if err != nil {
		return 0, "", err
	}
	if limit == 0 {
		return 0, "the container has no memory limit", nil
	}
	soft := int64(float64(limit) * Share)
	debug.SetMemoryLimit(soft)
	return soft, fmt.Sprintf("%.0f%% of the container's limit of %d bytes (%s)", Share*100, limit, file), nil
}

// cgroupLimit reads the cgroup's memory limit in bytes, 0 for none, and
// the file it read.
func cgroupLimit(root string) (int64, string, error) {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		path := filepath.Join(root, f)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("reading the container's memory limit: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, path, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, "", fmt.Errorf("reading the container's memory limit: %s holds %q, not a number of bytes", path, s)
		}
		if n >= unlimitedV1 {
			return 0, path, nil
		}
		return n, path, nil
	}
	return 0, "", nil
}
