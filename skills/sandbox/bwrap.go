package sandbox

// bwrapArgs confines with bubblewrap. The root is an empty read-only
// tmpfs on which only the system (systemMounts), a fresh /proc, a minimal
// /dev, a private /tmp and the policy's directories are mounted; every
// namespace is unshared (the network too unless allowed), every
// capability is dropped (bubblewrap keeps them all when run as root
// otherwise) and no_new_privs is set, so setuid and file-capability
// binaries gain nothing. --new-session keeps the command off the agent's
// terminal; the pid namespace and --die-with-parent still end everything
// in it when the agent kills bwrap's process group.
func bwrapArgs(p Policy, dir string, own []bind) []string {
	a := []string{
		"--unshare-all",
		"--die-with-parent",
		"--new-session",
		"--cap-drop", "ALL",
	}
	if p.Network {
		a = append(a, "--share-net")
	}
	for _, m := range systemMounts() {
		if m.link != "" {
			a = append(a, "--symlink", m.link, m.dst)
		} else {
			a = append(a, "--ro-bind", m.src, m.dst)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	// The policy's directories come after the tmpfs, so one under /tmp
	// shows through.
	for _, b := range own {
		if b.rw {
			a = append(a, "--bind", b.src, b.dst)
		} else {
			a = append(a, "--ro-bind", b.src, b.dst)
		}
	}
	a = append(a, "--remount-ro", "/")
	if dir != "" {
		a = append(a, "--chdir", dir)
	}
	return a
}
