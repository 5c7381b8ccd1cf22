// Package version says which Courier a binary is: the release version and
// git revision that `make build` and `make release` stamp into it with
// -ldflags, or, for a plain `go build`, what the Go toolchain recorded.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time:
//
//	-X github.com/courierdev/courier/pkg/version.version=v0.1.0
//	-X github.com/courierdev/courier/pkg/version.revision=<git commit>
var (
	version  string
	revision string
)

// unknown stands for a value neither the build nor the toolchain recorded.
const unknown = "unknown"

// Info is what a binary reports of itself.
type Info struct {
	// Version is the release, such as v0.1.0; a build from a tree without
	// a stamped version reports the module's version, "(devel)" for a
	// checkout.
	Version string `json:"version"`
	// Revision is the git commit built, with "-dirty" when the tree had
	// uncommitted changes.
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the stamped version and revision, and whatever the Go
// toolchain recorded for those not stamped.
func Get() Info {
	return resolve(version, revision, readBuildInfo())
}

// String is the one line `courier --version` prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s, %s)", i.Version, i.Revision, i.GoVersion, i.Platform)
}

func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// resolve prefers the stamped values and falls back on the build
// information: the main module's version, and the VCS settings `go build`
// records in a git checkout.
func resolve(stampedVersion, stampedRevision string, bi *debug.BuildInfo) Info {
	info := Info{Version: stampedVersion, Revision: stampedRevision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			info.Revision = vcsRevision(bi.Settings)
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
	}
	if info.Version == "" {
		info.Version = unknown
	}
	if info.Revision == "" {
		info.Revision = unknown
	}
	return info
}

func vcsRevision(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}
