package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestReleaseVersion(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC)
	const commit = "fedcba9876543210fedcba9876543210fedcba98"
	for _, tc := range []struct {
		name, declared, describe, want, deb string
	}{
		{"tagged with the declared version", "v1.2.0", "v1.2.0-0-gfedcba987654", "v1.2.0", "1.2.0"},
		{"after the declared version's tag", "v1.2.0", "v1.2.0-3-gfedcba987654", "v1.2.0-3-gfedcba987654", "1.2.0+3.gfedcba987654"},
		{"tagged pre-release", "v1.3.0-rc.1", "v1.3.0-rc.1-0-gfedcba987654", "v1.3.0-rc.1", "1.3.0~rc.1"},
		{"after a pre-release tag", "v1.3.0-rc.1", "v1.3.0-rc.1-2-gfedcba987654", "v1.3.0-rc.1-2-gfedcba987654", "1.3.0~rc.1+2.gfedcba987654"},
		{"after an older release, preparing the next", "v1.3.0", "v1.2.0-3-gfedcba987654", "v1.3.0-0.20261123083000-fedcba987654", "1.3.0~0.20261123083000.gfedcba987654"},
		{"no tag", "v0.9.0", "", "v0.9.0-0.20261123083000-fedcba987654", "0.9.0~0.20261123083000.gfedcba987654"},
		{"no tag, preparing a pre-release", "v1.0.0-rc.1", "", "v1.0.0-rc.1.0.20261123083000-fedcba987654", "1.0.0~rc.1.0.20261123083000.gfedcba987654"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := releaseVersion(source{Commit: commit, Time: at, Describe: tc.describe, Declared: tc.declared})
			if err != nil || v != tc.want {
				t.Fatalf("releaseVersion(declared %q, describe %q) = %q, %v; want %q", tc.declared, tc.describe, v, err, tc.want)
			}
			d, err := debVersion(v)
			if err != nil || d != tc.deb {
				t.Errorf("debVersion(%q) = %q, %v; want %q", v, d, err, tc.deb)
			}
		})
	}
	for _, bad := range []string{"1.2.0", "vX", "v1.2.0_beta"} {
		if d, err := debVersion(bad); err == nil {
			t.Errorf("debVersion(%q) = %q, want an error", bad, d)
		}
	}
	for _, tc := range []struct{ name, declared, describe, wantErr string }{
		{"describe output without a v-tag", "v1.2.0", "release-7", "cannot read git describe"},
		{"a tag that is not the declared version", "v1.2.0", "v1.3.0-0-gfedcba987654", "HEAD is tagged v1.3.0 but cmd/evoclaw/VERSION says v1.2.0"},
		{"a declared version that is not one", "1.2", "", "cmd/evoclaw/VERSION says \"1.2\""},
		{"nothing declared", "", "v1.2.0-0-gfedcba987654", "cmd/evoclaw/VERSION says \"\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := releaseVersion(source{Commit: commit, Time: at, Describe: tc.describe, Declared: tc.declared})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("releaseVersion(declared %q, describe %q) = %q, %v; want an error with %q", tc.declared, tc.describe, v, err, tc.wantErr)
			}
		})
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
	order := []string{"v0.0.0-20261123083000-fedcba987654", "v0.9.0-0.20261123083000-fedcba987654", "v0.9.0", "v1.3.0-rc.1", "v1.3.0-rc.1-2-gfedcba987654", "v1.3.0", "v1.3.0-1-gfedcba987654", "v1.3.1"}
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
