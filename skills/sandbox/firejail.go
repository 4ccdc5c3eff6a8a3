package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// exists reports whether p names anything, following symlinks.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// firejailKeep are the top-level entries of / firejail leaves in place:
// the system (read-only by --read-only=/), and /etc, /dev and /proc,
// which firejail replaces with its own minimal versions.
var firejailKeep = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}

// firejailArgs confines with firejail. Firejail starts from the host's
// file system, so what must not be seen is taken away: /etc becomes a
// tmpfs holding only EtcFiles, /dev a minimal one, /run holds only
// firejail's own directory, every other top-level directory is
// blacklisted except where the policy's directories live, and there
// --whitelist leaves only those directories in an empty tmpfs. /tmp is a
// private tmpfs. All capabilities are dropped, no_new_privs and the
// default seccomp filter are set, and without the network permission
// there is no network namespace to reach anything through.
func firejailArgs(p Policy, own []bind) []string {
	a := []string{"--quiet", "--noprofile", "--caps.drop=all", "--nonewprivs", "--noroot", "--seccomp",
		"--private-dev", "--read-only=/"}
	// --whitelist in /etc leaves an empty tmpfs with only these entries
	// (--private-etc would do the same but prints errors into the
	// command's stderr on firejail 0.9.72).
	for _, name := range EtcFiles {
		if p := filepath.Join("/etc", name); exists(p) {
			a = append(a, "--whitelist="+p)
		}
	}
	if !p.Network {
		a = append(a, "--net=none")
	}
	tmpUsed := false
	entries, _ := os.ReadDir("/") // unreadable: nothing to blacklist by name, and the whitelist still applies
	for _, e := range entries {
		top := "/" + e.Name()
		if slices.Contains(firejailKeep, e.Name()) {
			continue
		}
		used := slices.ContainsFunc(own, func(b bind) bool { return under(b.dst, top) || under(b.src, top) })
		switch {
		case top == "/tmp":
			tmpUsed = used
		case top == "/run" && !used:
			// firejail needs its own /run/firejail while it sets up; this
			// leaves it (no sockets in it) and nothing else of /run.
			a = append(a, "--whitelist=/run/firejail")
		case !used:
			a = append(a, "--blacklist="+top)
		}
	}
	if !tmpUsed {
		a = append(a, "--private-tmp")
	}
	for _, b := range own {
		a = append(a, "--whitelist="+b.dst)
	}
	for _, b := range own {
		if b.rw {
			a = append(a, "--read-write="+b.dst)
		} else {
			a = append(a, "--read-only="+b.dst)
		}
	}
	return a
}
