package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCgroupLimit(t *testing.T) {
	cases := map[string]struct {
		files   map[string]string
		want    int64
		wantErr bool
	}{
		"cgroup v2 with a limit":           {files: map[string]string{"memory.max": "536870912\n"}, want: 536870912},
		"cgroup v2 without a limit":        {files: map[string]string{"memory.max": "max\n"}},
		"cgroup v1 with a limit":           {files: map[string]string{"memory/memory.limit_in_bytes": "268435456\n"}, want: 268435456},
		"cgroup v1 without a limit":        {files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		"v2 read before v1":                {files: map[string]string{"memory.max": "1048576", "memory/memory.limit_in_bytes": "2097152"}, want: 1048576},
		"no cgroup files: not a container": {},
		"a limit that is not a number":     {files: map[string]string{"memory.max": "lots"}, wantErr: true},
		"a limit of zero":                  {files: map[string]string{"memory.max": "0"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for f, content := range tc.files {
				path := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, _, err := cgroupLimit(root)
			if (err != nil) != tc.wantErr {
				t.Fatalf("cgroupLimit() error = %v, want error: %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("limit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromCgroupSetsTheRuntimeLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("from the container's limit", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		os.Unsetenv("GOMEMLIMIT")
		got, _, err := FromCgroup(root)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(int64(900000000), got); diff != "" {
			t.Errorf("limit set (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(int64(900000000), debug.SetMemoryLimit(-1)); diff != "" {
			t.Errorf("runtime's limit (-want +got):\n%s", diff)
		}
	})
	t.Run("GOMEMLIMIT wins", func(t *testing.T) {
		debug.SetMemoryLimit(before)
		t.Setenv("GOMEMLIMIT", "2GiB")
		got, why, err := FromCgroup(root)
		if err != nil || got != 0 {
			t.Fatalf("FromCgroup() = %d, %v; want nothing set", got, err)
		}
		if diff := cmp.Diff(before, debug.SetMemoryLimit(-1)); diff != "" {
			t.Errorf("runtime's limit changed (-want +got):\n%s\nbecause %s", diff, why)
		}
	})
}
