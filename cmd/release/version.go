package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// source is what git says about the tree being released.
type source struct {
	// Commit is the full revision of HEAD.
	Commit string
	// Time is the commit's time; it is also the build date, so that two
	// builds of one commit are identical.
	Time time.Time
	// Modified reports uncommitted changes to tracked files.
	Modified bool
	// Describe is `git describe --tags --long --match 'v[0-9]*'`
	// ("v1.2.0-3-gabcdef123456"), empty when no tag is reachable.
	Describe string
	// Declared is the version the tree says it is or is being prepared
	// as: cmd/evoclaw/VERSION ("v0.9.0"), which a plain go build prints.
	Declared string
}

// DeclaredFile is where the tree declares its version, relative to the
// repository root; cmd/evoclaw embeds it.
const DeclaredFile = "cmd/evoclaw/VERSION"

// semverRE is a release version: v, three numbers, an optional
// pre-release.
var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// describeRE splits git describe --long output: tag, commits since, hash.
var describeRE = regexp.MustCompile(`^(v[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)-([0-9]+)-g([0-9a-f]+)$`)

// releaseVersion is the version a build of src is stamped with:
//   - on a tagged commit, the tag, which must be the declared version (a
//     release tag and the source it names agree, or nothing is built);
//   - after a tag that is the declared version (the tree was released and
//     not yet bumped), what git describe says: "v0.9.0-3-gabcdef123456";
//   - otherwise (no tag, or the last tag is an older release), a Go-style
//     pseudo-version before the declared version,
//     "v0.9.0-0.20261123083000-abcdef123456", as a plain go build of the
//     commit prints it.
func releaseVersion(src source) (string, error) {
	if !semverRE.MatchString(src.Declared) {
		return "", fmt.Errorf("release version: %s says %q, want a version such as v1.2.0 or v1.3.0-rc.1", DeclaredFile, src.Declared)
	}
	if src.Describe != "" {
		m := describeRE.FindStringSubmatch(src.Describe)
		if m == nil {
			return "", fmt.Errorf("release version: cannot read git describe output %q", src.Describe)
		}
		tag, since := m[1], m[2]
		if since == "0" {
			if tag != src.Declared {
				return "", fmt.Errorf("release version: HEAD is tagged %s but %s says %s; set the file to the tag's version in the tagged commit", tag, DeclaredFile, src.Declared)
			}
			return tag, nil
		}
		if tag == src.Declared {
			return src.Describe, nil
		}
	}
	if len(src.Commit) < 12 {
		return "", fmt.Errorf("release version: commit %q is too short", src.Commit)
	}
	sep := "-0."
	if strings.Contains(src.Declared, "-") {
		sep = ".0."
	}
	return src.Declared + sep + src.Time.UTC().Format("20060102150405") + "-" + src.Commit[:12], nil
}

// debVersion turns a release version into a Debian version that sorts
// the same way: "v1.2.0" is "1.2.0", "v1.2.0-rc1" is "1.2.0~rc1" (before
// 1.2.0), "v1.2.0-3-gabc" is "1.2.0+3.gabc" (after 1.2.0), and the
// pseudo-versions "v0.0.0-20261123083000-abc" and
// "v0.9.0-0.20261123083000-abc" are "0.0.0~20261123083000.gabc" and
// "0.9.0~0.20261123083000.gabc" (before 0.9.0).
func debVersion(v string) (string, error) {
	if !strings.HasPrefix(v, "v") || len(v) < 2 || v[1] < '0' || v[1] > '9' {
		return "", fmt.Errorf("debian version of %q: want v<digit>...", v)
	}
	v = v[1:]
	if m := describeRE.FindStringSubmatch("v" + v); m != nil {
		base, err := debVersion(m[1])
		if err != nil {
			return "", err
		}
		return base + "+" + m[2] + ".g" + m[3], nil
	}
	if base, rest, ok := strings.Cut(v, "-"); ok {
		// A pseudo-version: timestamp and hash.
		if ts, hash, ok := strings.Cut(rest, "-"); ok {
			pre, digits := "", ts
			if i := strings.LastIndex(ts, "."); i >= 0 {
				pre, digits = ts[:i+1], ts[i+1:]
			}
			if len(digits) == 14 && isDigits(digits) {
				return base + "~" + pre + digits + ".g" + hash, nil
			}
		}
		// A pre-release: before the release itself.
		v = base + "~" + strings.ReplaceAll(rest, "-", ".")
	}
	for _, r := range v {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune(".+~", r)) {
			return "", fmt.Errorf("debian version of %q: %q is not allowed", "v"+v, r)
		}
	}
	return v, nil
}

func isDigits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
