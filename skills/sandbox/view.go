package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// What a sandboxed command sees of the host, besides its own directories.
// Everything else (/home, /root, /run, /var, /srv, /opt, /mnt, /media,
// /sys, the rest of /etc, evoclaw's data directories and every socket in
// them) is not there at all.
var (
	// SystemDirs are shown read-only: programs and libraries. A top-level
	// symlink (/bin -> usr/bin on merged-/usr systems) is kept a symlink.
	SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
	// EtcFiles are the entries of /etc shown read-only: users and groups
	// (names only; shadow and gshadow stay hidden), name resolution, TLS
	// roots, the dynamic linker's cache, Debian's alternatives (/usr/bin/awk
	// is a link into it) and the time zone. Entries missing on the host are
	// skipped.
	EtcFiles = []string{
		"passwd", "group", "hosts", "host.conf", "resolv.conf", "nsswitch.conf", "gai.conf", "services", "protocols",
		"ssl", "ca-certificates", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone",
		"os-release", "debian_version", "mime.types", "magic",
	}
)

// mount is one host path shown inside the sandbox.
type mount struct {
	src, dst string // dst is where it appears; src the host path with symlinks resolved
	link     string // when set, dst is a symlink to link instead of a mount
	dir      bool
}

// systemMounts lists what SystemDirs and EtcFiles give on this host.
func systemMounts() []mount {
	var ms []mount
	for _, d := range SystemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				ms = append(ms, mount{dst: d, link: target})
			}
		case fi.IsDir():
			ms = append(ms, mount{src: d, dst: d, dir: true})
		}
	}
	for _, name := range EtcFiles {
		p := filepath.Join("/etc", name)
		// resolv.conf often links into /run (systemd-resolved,
		// NetworkManager): show the one file it names, not /run.
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		fi, err := os.Stat(real)
		if err != nil {
			continue
		}
		ms = append(ms, mount{src: real, dst: p, dir: fi.IsDir()})
	}
	return ms
}

// under reports whether p is dir or lies below it (both clean, absolute).
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
