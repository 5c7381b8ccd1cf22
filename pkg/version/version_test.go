package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	checkout := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/courierdev/courier", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "e25abdf0"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/courierdev/courier", Version: "(devel)"},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "e25abdf0"}, {Key: "vcs.modified", Value: "true"}},
	}
	installed := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/courierdev/courier", Version: "v0.1.0"},
	}
	cases := map[string]struct {
		version, revision string
		bi                *debug.BuildInfo
		want              Info
	}{
		"stamped values win over the toolchain's": {
			version: "v0.1.0", revision: "0123abc", bi: dirty,
			want: Info{Version: "v0.1.0", Revision: "0123abc", GoVersion: "go1.26.8", Platform: platform},
		},
		"a checkout built without stamps": {
			bi:   checkout,
			want: Info{Version: "(devel)", Revision: "e25abdf0", GoVersion: "go1.26.8", Platform: platform},
		},
		"uncommitted changes mark the revision": {
			bi:   dirty,
			want: Info{Version: "(devel)", Revision: "e25abdf0-dirty", GoVersion: "go1.26.8", Platform: platform},
		},
		"go install of a tagged module": {
			bi:   installed,
			want: Info{Version: "v0.1.0", Revision: "unknown", GoVersion: "go1.26.8", Platform: platform},
		},
		"no build information at all": {
			want: Info{Version: "unknown", Revision: "unknown", GoVersion: runtime.Version(), Platform: platform},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := resolve(tc.version, tc.revision, tc.bi)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resolve() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "v0.1.0", Revision: "0123abc", GoVersion: "go1.26.8", Platform: "linux/arm64"}.String()
	want := "v0.1.0 (revision 0123abc, go1.26.8, linux/arm64)"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
