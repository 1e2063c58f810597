// Package buildinfo says what slotq a binary was built from: the slotq
// module's version and the VCS revision and time of its source. `slotq
// --version` prints it and the worker function logs it at its first
// invocation, so that what runs can be matched to a commit.
//
// It reads the build's own record (debug.ReadBuildInfo). A build that
// recorded no VCS settings (a source copy without its .git folder, a git
// worktree, -buildvcs=false) is told them by -ldflags -X instead: the
// Makefile's Lambda builds pass Version, Revision, Time and Modified.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Module is slotq's module path.
const Module = "github.com/slotq/slotq"

// Set with -ldflags "-X github.com/slotq/slotq/internal/buildinfo.Revision=…"
// where the build records no VCS settings; the build's own record wins.
var (
	// Version is a release tag of the source ("v0.4.0"); empty: none.
	Version string
	// Revision is the commit, Time its commit time (RFC 3339, UTC).
	Revision string
	Time     string
	// Modified is "true" when the work tree had changes.
	Modified string
)

// String is what the running binary was built from: "v0.4.0 (commit
// 1a2b3c4d5e6f, 2025-06-01T10:00:00Z)", "(devel) (commit 1a2b3c4d5e6f,
// modified)", or "(devel)" when nothing says more.
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{Main: debug.Module{Path: Module}}
	}
	return Of(info)
}

// Of is String's reading of info, with the -X values standing in for the
// VCS settings and version info lacks.
func Of(info *debug.BuildInfo) string {
	if info.Main.Path != Module {
		// A binary of another module (a project's worker, go tool
		// slotq): its VCS settings are that module's, not slotq's.
		for _, m := range info.Deps {
			if m.Path == Module {
				if m.Replace != nil {
					return m.Version + " => " + m.Replace.Path
				}
				return m.Version
			}
		}
		return "(devel)"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "(devel)"
		if Version != "" {
			v = Version
		}
	}
	var rev, at, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		rev, at, modified = Revision, Time, Modified
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if at != "" {
		at = ", " + at
	}
	if modified == "true" {
		modified = ", modified"
	} else {
		modified = ""
	}
	return fmt.Sprintf("%s (commit %s%s%s)", v, rev, at, modified)
}
