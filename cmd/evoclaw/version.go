package main

import (
	_ "embed"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// declaredFile names the release this source tree is, or is being
// prepared as: the VERSION file beside this one ("v0.9.0"). cmd/release
// refuses to build a tag that names another version, so a tagged release
// and a plain build of its source agree.
//
//go:embed VERSION
var declaredFile string

// declaredVersion is VERSION without surrounding white space.
var declaredVersion = strings.TrimSpace(declaredFile)

// buildInfo is what `evoclaw version` reports about the binary.
type buildInfo struct {
	// Version is the release (a git tag such as "v1.2.0") stamped with
	// -ldflags "-X main.version=..."; for a plain go build, the version
	// the toolchain derived from VCS, else a pseudo-version of the
	// declared version and the commit, else the declared version itself.
	Version string
	// Commit is the VCS revision the binary was built from; empty when the
	// build carried no VCS information (go run, go test, -buildvcs=false).
	Commit string
	// Date is the commit's time, RFC 3339 in UTC: the build date of a
	// reproducible build, which never reads the clock. Empty with Commit.
	Date string
	// Modified reports uncommitted changes in the tree that was built.
	Modified bool
	// Go is the toolchain version; Platform is GOOS/GOARCH (with GOARM).
	Go, Platform string
}

// Set at build time by cmd/release with -ldflags "-X main.commit=...": the
// Go toolchain records no VCS information in a linked git worktree
// (golang/go#58218), so a release names its commit itself. Empty in a
// plain go build, which falls back to what the toolchain recorded.
var (
	commit   string // full revision
	date     string // commit time, RFC 3339 UTC
	modified string // "true" when the tree had uncommitted changes
)

// stamp is what -ldflags set: version, commit, date and modified.
type stamp struct{ version, commit, date, modified string }

// readBuildInfo combines the stamped values with the VCS settings the Go
// toolchain records (-buildvcs) and the declared version; stamped values
// win.
func readBuildInfo(st stamp, declared string, bi *debug.BuildInfo, ok bool) buildInfo {
	info := buildInfo{Version: st.version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok && bi != nil {
		info.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.Date = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "GOARM":
				info.Platform += "v" + strings.TrimSuffix(s.Value, ",softfloat")
			}
		}
	}
	if st.commit != "" {
		info.Commit, info.Date, info.Modified = st.commit, st.date, st.modified == "true"
	}
	switch {
	case info.Version != "":
		// Stamped by cmd/release.
	case ok && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" &&
		!(strings.HasPrefix(bi.Main.Version, "v0.0.0-") && info.Commit != ""):
		// The version the Go toolchain derived from a tag (Go 1.24 and
		// later). With no tag at all it says v0.0.0-TIME-COMMIT, which
		// sorts before every release and ignores the declared one: the
		// next case names that commit as cmd/release would.
		info.Version = bi.Main.Version
	case info.Commit != "":
		// A pre-release of the declared version at this commit, as
		// cmd/release names an untagged build.
		info.Version = pseudoVersion(declared, info.Commit, info.Date, info.Modified)
	default:
		// Nothing recorded (-buildvcs=false, go run, go test): the source
		// says which release it is.
		info.Version = declared
	}
	return info
}

// pseudoVersion is a Go-style pseudo-version of a commit before the
// release base: "v0.9.0-0.YYYYMMDDHHMMSS-COMMIT12" (for a pre-release
// base "v1.0.0-rc.1", "v1.0.0-rc.1.0.YYYYMMDDHHMMSS-COMMIT12"), with
// "+dirty" for a modified tree. A release base sorts after the releases
// before it and before base itself; a pre-release base, as Go orders
// pseudo-versions, just after base.
func pseudoVersion(base, rev, date string, dirty bool) string {
	ts := strings.NewReplacer("-", "", ":", "", "T", "", "Z", "").Replace(date)
	if len(ts) > 14 {
		ts = ts[:14]
	}
	if len(ts) != 14 {
		ts = "00000000000000"
	}
	sep := "-0."
	if strings.Contains(base, "-") {
		sep = ".0."
	}
	v := base + sep + ts + "-" + shortCommit(rev)
	if dirty {
		v += "+dirty"
	}
	return v
}

// shortCommit is the first 12 characters of a revision.
func shortCommit(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// String is the one line `evoclaw version` prints, for example
// "evoclaw v1.2.0 commit 0123456789ab date 2026-11-22T10:00:00Z go1.26.8 linux/arm64",
// or "evoclaw v0.9.0 (source build, no commit recorded) go1.26.8 linux/amd64"
// for a build that recorded no commit.
func (b buildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "evoclaw %s", b.Version)
	if b.Commit != "" {
		fmt.Fprintf(&s, " commit %s", shortCommit(b.Commit))
		if b.Modified {
			s.WriteString("+modified")
		}
		fmt.Fprintf(&s, " date %s", b.Date)
	} else {
		s.WriteString(" (source build, no commit recorded)")
	}
	fmt.Fprintf(&s, " %s %s", b.Go, b.Platform)
	return s.String()
}

// currentBuild is this binary's buildInfo.
func currentBuild() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	return readBuildInfo(stamp{version, commit, date, modified}, declaredVersion, bi, ok)
}
