package buildinfo

import (
	"runtime/debug"
	"testing"
)

// Of reads the build's record, and the -X values only where the record
// has no VCS settings.
func TestOf(t *testing.T) {
	main := func(v string, settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: Module, Version: v}}
		for i := 0; i < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	ldflags := func(v, rev, at, modified string) func() {
		old := [4]string{Version, Revision, Time, Modified}
		Version, Revision, Time, Modified = v, rev, at, modified
		return func() { Version, Revision, Time, Modified = old[0], old[1], old[2], old[3] }
	}
	for _, tt := range []struct {
		name    string
		info    *debug.BuildInfo
		ldflags [4]string
		want    string
	}{
		{name: "release", info: main("v0.4.0", "vcs.revision", "1a2b3c4d5e6f7a8b9c0d", "vcs.time", "2025-06-01T10:00:00Z", "vcs.modified", "false"),
			want: "v0.4.0 (commit 1a2b3c4d5e6f, 2025-06-01T10:00:00Z)"},
		{name: "work tree", info: main("(devel)", "vcs.revision", "1a2b3c4d5e6f7a8b9c0d", "vcs.modified", "true"), want: "(devel) (commit 1a2b3c4d5e6f, modified)"},
		{name: "no vcs", info: main("(devel)"), want: "(devel)"},
		{name: "no vcs, ldflags", info: main("(devel)"), ldflags: [4]string{"", "9f8e7d6c5b4a39281706", "2026-11-26T14:00:00Z", "true"},
			want: "(devel) (commit 9f8e7d6c5b4a, 2026-11-26T14:00:00Z, modified)"},
		{name: "no vcs, ldflags of a tag", info: main(""), ldflags: [4]string{"v0.5.0", "9f8e7d6c5b4a39281706", "2026-11-26T14:00:00Z", "false"},
			want: "v0.5.0 (commit 9f8e7d6c5b4a, 2026-11-26T14:00:00Z)"},
		{name: "the record wins", info: main("v0.4.0", "vcs.revision", "1a2b3c4d5e6f7a8b9c0d", "vcs.time", "2025-06-01T10:00:00Z"),
			ldflags: [4]string{"v0.5.0", "9f8e7d6c5b4a39281706", "2026-11-26T14:00:00Z", "true"},
			want:    "v0.4.0 (commit 1a2b3c4d5e6f, 2025-06-01T10:00:00Z)"},
		{name: "another module's binary", info: &debug.BuildInfo{Main: debug.Module{Path: "example.com/acme"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffff"}},
			Deps:     []*debug.Module{{Path: Module, Version: "v0.4.0"}}}, want: "v0.4.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer ldflags(tt.ldflags[0], tt.ldflags[1], tt.ldflags[2], tt.ldflags[3])()
			if got := Of(tt.info); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}
