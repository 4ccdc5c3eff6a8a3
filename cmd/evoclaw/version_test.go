package main

import (
	"bytes"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "GOARM", Value: "6"},
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: "2026-11-22T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	clean := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: "2026-11-22T10:00:00Z"},
		{Key: "vcs.modified", Value: "false"},
	}}
	noVCS := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		name     string
		st       stamp
		declared string
		bi       *debug.BuildInfo
		want     string
	}{
		{"no build info at all", stamp{}, "v0.9.0", nil,
			"evoclaw v0.9.0 (source build, no commit recorded) go"},
		{"plain go build with -buildvcs=false", stamp{}, "v0.9.0", noVCS,
			"evoclaw v0.9.0 (source build, no commit recorded) go1.26.8 linux/"},
		{"plain go build of a modified checkout", stamp{}, "v0.9.0", vcs,
			"evoclaw v0.9.0-0.20261122100000-0123456789ab+dirty commit 0123456789ab+modified date 2026-11-22T10:00:00Z go1.26.8 linux/"},
		{"plain go build of a clean checkout", stamp{}, "v0.9.0", clean,
			"evoclaw v0.9.0-0.20261122100000-0123456789ab commit 0123456789ab date 2026-11-22T10:00:00Z go1.26.8 linux/"},
		{"a pre-release declared", stamp{}, "v1.0.0-rc.1", clean,
			"evoclaw v1.0.0-rc.1.0.20261122100000-0123456789ab commit 0123456789ab date "},
		{"the toolchain's own version of the module", stamp{}, "v0.9.0",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.3.0"}, Settings: clean.Settings},
			"evoclaw v1.3.0 commit 0123456789ab date 2026-11-22T10:00:00Z "},
		// Go 1.24 and later, in a repository without tags, derive
		// v0.0.0-TIME-COMMIT: the declared version names the commit
		// instead, as cmd/release does. Before, a plain go build of a fresh
		// clone said v0.0.0-..., a release older than every release.
		{"the toolchain's pseudo-version of an untagged commit", stamp{}, "v0.9.0",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261122100000-0123456789ab"}, Settings: clean.Settings},
			"evoclaw v0.9.0-0.20261122100000-0123456789ab commit 0123456789ab date 2026-11-22T10:00:00Z "},
		{"the toolchain's pseudo-version of an untagged, modified commit", stamp{}, "v0.9.0",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261122100000-0123456789ab+dirty"}, Settings: vcs.Settings},
			"evoclaw v0.9.0-0.20261122100000-0123456789ab+dirty commit 0123456789ab+modified date "},
		{"the toolchain's pseudo-version after a tag", stamp{}, "v0.9.0",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.8.1-0.20261122100000-0123456789ab"}, Settings: clean.Settings},
			"evoclaw v0.8.1-0.20261122100000-0123456789ab commit 0123456789ab "},
		{"release stamped by cmd/release", stamp{"v1.2.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-23T08:30:00Z", "false"}, "v0.9.0", vcs,
			"evoclaw v1.2.0 commit fedcba987654 date 2026-11-23T08:30:00Z go1.26.8 linux/"},
		{"stamp wins over the toolchain's version", stamp{"v1.2.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-23T08:30:00Z", "false"}, "v0.9.0",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.3.0"}},
			"evoclaw v1.2.0 commit fedcba987654 date 2026-11-23T08:30:00Z "},
		{"untagged release", stamp{"v0.9.0-0.20261123083000-fedcba987654", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-23T08:30:00Z", "true"}, "v0.9.0", nil,
			"evoclaw v0.9.0-0.20261123083000-fedcba987654 commit fedcba987654+modified date 2026-11-23T08:30:00Z "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readBuildInfo(tc.st, tc.declared, tc.bi, tc.bi != nil).String()
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want prefix %q", got, tc.want)
			}
			if regexp.MustCompile(`\bdev\b`).MatchString(got) {
				t.Errorf("%q says dev", got)
			}
		})
	}
	if got := readBuildInfo(stamp{}, "v0.9.0", vcs, true).Platform; !strings.HasSuffix(got, "v6") {
		t.Errorf("platform %q does not name GOARM", got)
	}
}

// TestDeclaredVersion checks the VERSION file: a semantic version with a
// leading v, which cmd/release compares with the tag.
func TestDeclaredVersion(t *testing.T) {
	if !regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`).MatchString(declaredVersion) {
		t.Fatalf("VERSION says %q, want a version such as v1.2.0 or v1.3.0-rc.1", declaredVersion)
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// A test binary records no commit and no stamp: the declared version.
	want := "evoclaw " + declaredVersion + " (source build, no commit recorded) "
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("version printed %q, want prefix %q", out.String(), want)
	}
}
