package benchstack

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKueuePatchApplies checks that the recorded patch of the pinned Kueue
// still applies to its module source, as
// tools/hack/build-kueue-multikueue-qps.sh applies it, and touches only the
// files it should.
func TestKueuePatchApplies(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Fatalf("finding the patch command (.ci/run installs it): %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	version := moduleVersion(t, filepath.Join(root, "hack/tools/go.mod"), "sigs.k8s.io/kueue")
	modCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(modCache)), "sigs.k8s.io", "kueue@"+version)
	if _, err := os.Stat(src); err != nil {
		// This package imports Kueue, so building its tests downloaded it.
		t.Fatalf("finding Kueue %s in the module cache: %v", version, err)
	}
	cases := map[string]struct {
		patch     string
		wantFiles []string
	}{
		"worker QPS 1000 (kueue#15206)": {
			patch:     "tools/hack/kueue-multikueue-qps.patch",
			wantFiles: []string{"pkg/controller/admissionchecks/multikueue/multikueuecluster.go"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("patch", "--dry-run", "-p1", "-d", src, "-i", filepath.Join(root, tc.patch))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the patch does not apply to Kueue %s: %v\n%s", version, err, out)
			}
			var files []string
			for line := range strings.SplitSeq(string(out), "\n") {
				if f, ok := strings.CutPrefix(line, "checking file "); ok {
					files = append(files, f)
				}
			}
			if diff := cmp.Diff(tc.wantFiles, files); diff != "" {
				t.Errorf("patched files (-want +got):\n%s", diff)
			}
		})
	}
}

// moduleVersion reads a module's version from a go.mod's require lines.
func moduleVersion(t *testing.T, goMod, module string) string {
	t.Helper()
	f, err := os.Open(goMod)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == module {
			return fields[1]
		}
	}
	t.Fatalf("no %s in %s", module, goMod)
	return ""
}
