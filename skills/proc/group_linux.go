//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// GroupOf returns the Group whose first process is pid, which must run.
func GroupOf(pid int) (Group, error) {
	st, err := readStat(pid)
	if err != nil {
		return Group{}, fmt.Errorf("group of %d: %w", pid, err)
	}
	boot, err := BootID()
	if err != nil {
		return Group{}, fmt.Errorf("group of %d: %w", pid, err)
	}
	return Group{Pgid: pid, StartTicks: st.start, BootID: boot}, nil
}

// bootID caches the boot id: it cannot change while this process runs.
var bootID atomic.Pointer[string]

// BootID returns the kernel's boot id, which changes at every boot.
func BootID() (string, error) {
	if id := bootID.Load(); id != nil {
		return *id, nil
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	bootID.Store(&id)
	return id, nil
}

// KillLeftovers kills with SIGKILL whatever still runs in g: the processes
// a tool left behind when its agent died, or the whole tool when an agent
// without a parent-death signal (an older version, another OS) ran it. It
// returns how many processes it found; none is the usual case. It kills
// nothing and returns ErrGroupReused when the id is held by something
// else: another boot, a leader with another start time, or a member that
// started before the group's leader did. Members of the group that the
// tool moved into a session or group of their own are not found.
func (g Group) KillLeftovers() (int, error) {
	if g.Pgid <= 1 || g.Pgid == syscall.Getpgrp() {
		return 0, fmt.Errorf("kill leftovers of group %d: %w: not a tool's group", g.Pgid, ErrGroupReused)
	}
	boot, err := BootID()
	if err != nil {
		return 0, fmt.Errorf("kill leftovers of group %d: %w", g.Pgid, err)
	}
	if boot != g.BootID {
		return 0, nil // another boot: the group died with the machine
	}
	members, err := groupMembers(g.Pgid)
	if err != nil {
		return 0, fmt.Errorf("kill leftovers of group %d: %w", g.Pgid, err)
	}
	for _, m := range members {
		if m.pid == g.Pgid && m.start != g.StartTicks || m.start < g.StartTicks {
			return 0, fmt.Errorf("kill leftovers of group %d: %w (pid %d started at tick %d, the group at %d)",
				g.Pgid, ErrGroupReused, m.pid, m.start, g.StartTicks)
		}
	}
	if len(members) == 0 {
		return 0, nil
	}
	// The id cannot be handed out again while a member lives, so the
	// members checked above are the group's.
	if err := syscall.Kill(-g.Pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return len(members), fmt.Errorf("kill leftovers of group %d: %w", g.Pgid, err)
	}
	return len(members), nil
}

// stat holds the fields of /proc/{pid}/stat this package reads.
type stat struct {
	pid, pgid int
	state     byte
	start     uint64
}

// readStat parses /proc/{pid}/stat. The command name, in parentheses, may
// hold spaces and parentheses; the fields after its last ")" are fixed.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	pgid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat: %w", pid, err)
	}
	return stat{pid: pid, pgid: pgid, state: f[0][0], start: start}, nil
}

// groupMembers lists the live processes (not zombies) of group pgid.
func groupMembers(pgid int) ([]stat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgid != pgid || st.state == 'Z' {
			continue // gone meanwhile, or not of the group
		}
		out = append(out, st)
	}
	return out, nil
}
