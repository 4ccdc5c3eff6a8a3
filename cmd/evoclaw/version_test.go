package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "GOARM", Value: "6"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-22T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name string
		st   stamp
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", stamp{}, nil, "evoclaw dev "},
		{"plain go build of a checkout", stamp{version: "dev"}, vcs,
			"evoclaw v0.0.0-20261122100000-0123456789ab+dirty commit 0123456789ab+modified date 2026-11-22T10:00:00Z go1.26.8 linux/"},
		{"the toolchain's own version of the module", stamp{version: "dev"},
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.3.0"}}, "evoclaw v1.3.0 "},
		{"release stamped by cmd/release", stamp{"v1.2.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-23T08:30:00Z", "false"}, vcs,
			"evoclaw v1.2.0 commit fedcba987654 date 2026-11-23T08:30:00Z go1.26.8 linux/"},
		{"untagged release", stamp{"v0.0.0-20261123083000-fedcba987654", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-23T08:30:00Z", "true"}, nil,
			"evoclaw v0.0.0-20261123083000-fedcba987654 commit fedcba987654+modified date 2026-11-23T08:30:00Z "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readBuildInfo(tc.st, tc.bi, tc.bi != nil).String()
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want prefix %q", got, tc.want)
			}
		})
	}
	if got := readBuildInfo(stamp{}, vcs, true).Platform; !strings.HasSuffix(got, "v6") {
		t.Errorf("platform %q does not name GOARM", got)
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "evoclaw dev") {
		t.Fatalf("version printed %q", out.String())
	}
}
