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
}

// describeRE splits git describe --long output: tag, commits since, hash.
var describeRE = regexp.MustCompile(`^(v[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)-([0-9]+)-g([0-9a-f]+)$`)

// releaseVersion is the version a build of src is stamped with: the tag
// itself on a tagged commit; "v1.2.0-3-gabcdef123456" (as git describe
// prints it) three commits after v1.2.0; a Go-style pseudo-version
// "v0.0.0-20261123083000-abcdef123456" when no tag is reachable.
func releaseVersion(src source) (string, error) {
	if src.Describe == "" {
		if len(src.Commit) < 12 {
			return "", fmt.Errorf("release version: commit %q is too short", src.Commit)
		}
		return "v0.0.0-" + src.Time.UTC().Format("20060102150405") + "-" + src.Commit[:12], nil
	}
	m := describeRE.FindStringSubmatch(src.Describe)
	if m == nil {
		return "", fmt.Errorf("release version: cannot read git describe output %q", src.Describe)
	}
	if m[2] == "0" {
		return m[1], nil
	}
	return src.Describe, nil
}

// debVersion turns a release version into a Debian version that sorts
// the same way: "v1.2.0" is "1.2.0", "v1.2.0-rc1" is "1.2.0~rc1" (before
// 1.2.0), "v1.2.0-3-gabc" is "1.2.0+3.gabc" (after 1.2.0), and the
// pseudo-version "v0.0.0-20261123083000-abc" is "0.0.0~20261123083000.gabc".
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
		if ts, hash, ok := strings.Cut(rest, "-"); ok && len(ts) == 14 && isDigits(ts) {
			return base + "~" + ts + ".g" + hash, nil
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
