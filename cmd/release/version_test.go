package main

import (
	"os/exec"
	"testing"
	"time"
)

func TestReleaseVersion(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC)
	const commit = "fedcba9876543210fedcba9876543210fedcba98"
	for _, tc := range []struct {
		describe, want, deb string
	}{
		{"v1.2.0-0-gfedcba987654", "v1.2.0", "1.2.0"},
		{"v1.2.0-3-gfedcba987654", "v1.2.0-3-gfedcba987654", "1.2.0+3.gfedcba987654"},
		{"v1.3.0-rc.1-0-gfedcba987654", "v1.3.0-rc.1", "1.3.0~rc.1"},
		{"v1.3.0-rc.1-2-gfedcba987654", "v1.3.0-rc.1-2-gfedcba987654", "1.3.0~rc.1+2.gfedcba987654"},
		{"", "v0.0.0-20261123083000-fedcba987654", "0.0.0~20261123083000.gfedcba987654"},
	} {
		v, err := releaseVersion(source{Commit: commit, Time: at, Describe: tc.describe})
		if err != nil || v != tc.want {
			t.Errorf("releaseVersion(describe %q) = %q, %v; want %q", tc.describe, v, err, tc.want)
			continue
		}
		d, err := debVersion(v)
		if err != nil || d != tc.deb {
			t.Errorf("debVersion(%q) = %q, %v; want %q", v, d, err, tc.deb)
		}
	}
	for _, bad := range []string{"1.2.0", "vX", "v1.2.0_beta"} {
		if d, err := debVersion(bad); err == nil {
			t.Errorf("debVersion(%q) = %q, want an error", bad, d)
		}
	}
	if _, err := releaseVersion(source{Describe: "release-7"}); err == nil {
		t.Error("releaseVersion accepted describe output without a v-tag")
	}
}

// TestDebVersionOrder checks with dpkg itself that the Debian versions
// sort as the releases do: a pre-release before its release, commits
// after a tag after it, an untagged tree before every release.
func TestDebVersionOrder(t *testing.T) {
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Skip("dpkg not installed")
	}
	order := []string{"v0.0.0-20261123083000-fedcba987654", "v1.3.0-rc.1", "v1.3.0-rc.1-2-gfedcba987654", "v1.3.0", "v1.3.0-1-gfedcba987654", "v1.3.1"}
	for i := 1; i < len(order); i++ {
		lo, err := debVersion(order[i-1])
		if err != nil {
			t.Fatal(err)
		}
		hi, err := debVersion(order[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(dpkg, "--compare-versions", lo, "lt", hi).Run(); err != nil {
			t.Errorf("dpkg does not sort %s (%s) before %s (%s): %v", lo, order[i-1], hi, order[i], err)
		}
	}
}
