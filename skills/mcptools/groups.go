package mcptools

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evoclaw/evoclaw/edge/atomicfile"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// maxGroupFile bounds what is read of a group file: far more lines than
// servers a configuration holds.
const maxGroupFile = 64 << 10

// groupFile records the process groups of the running stdio servers, one
// a line ("pgid start-ticks boot-id"), so that the next start of the agent
// kills what the servers of a killed agent left running: the parent-death
// signal reaches a server but not what it started, which is reparented
// and runs on. A nil *groupFile records nothing.
type groupFile struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex         // guards groups and the file
	groups map[int]proc.Group // by pgid
}

// openGroups kills what the groups recorded at path still hold, as a
// killed agent's servers left them, and returns the file that records the
// groups of the servers started from now on. A group whose id now names
// other processes is left alone (proc.Group.KillLeftovers).
func openGroups(path string, log *slog.Logger) *groupFile {
	f := &groupFile{path: path, log: log, groups: map[int]proc.Group{}}
	for _, g := range readGroups(path, log) {
		killed, err := g.KillLeftovers()
		switch {
		case err != nil && !errors.Is(err, errors.ErrUnsupported):
			log.Warn("left the processes of an MCP server's group alone", "pgid", g.Pgid, "err", err)
		case killed > 0:
			log.Warn("killed what the MCP servers of a killed agent left running", "pgid", g.Pgid, "processes", killed)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.write()
	return f
}

// readGroups reads the groups recorded at path; a line that does not
// parse is logged and skipped.
func readGroups(path string, log *slog.Logger) []proc.Group {
	file, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("read the MCP servers' process groups", "err", err)
		}
		return nil
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxGroupFile))
	if err != nil {
		log.Warn("read the MCP servers' process groups", "err", err)
	}
	groups, errs := parseGroups(b)
	for _, err := range errs {
		log.Warn("skip a line of the MCP servers' process groups", "file", path, "err", err)
	}
	return groups
}

// parseGroups parses the lines of a group file.
func parseGroups(b []byte) ([]proc.Group, []error) {
	var groups []proc.Group
	var errs []error
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		g, err := parseGroup(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", i+1, err))
			continue
		}
		groups = append(groups, g)
	}
	return groups, errs
}

// groupLine is the line of g in a group file, which parseGroup reads.
func groupLine(g proc.Group) string {
	return fmt.Sprintf("%d %d %s\n", g.Pgid, g.StartTicks, g.BootID)
}

func parseGroup(line string) (proc.Group, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return proc.Group{}, fmt.Errorf("%d fields, want 3 (pgid, start ticks, boot id)", len(f))
	}
	pgid, err := strconv.Atoi(f[0])
	if err != nil || pgid <= 1 {
		return proc.Group{}, fmt.Errorf("pgid %.20q: not a process group's", f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return proc.Group{}, fmt.Errorf("start ticks %.20q: %w", f[1], strconv.ErrSyntax)
	}
	return proc.Group{Pgid: pgid, StartTicks: start, BootID: f[2]}, nil
}

// add records the group of the server whose pid is pgid.
func (f *groupFile) add(pgid int) {
	if f == nil {
		return
	}
	g, err := proc.GroupOf(pgid)
	if err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			f.log.Warn("identify an MCP server's process group", "pgid", pgid, "err", err)
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[pgid] = g
	f.write()
}

// remove forgets the group pgid, killed with its server.
func (f *groupFile) remove(pgid int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.groups[pgid]; !ok {
		return
	}
	delete(f.groups, pgid)
	f.write()
}

// write replaces the file with the groups recorded; f.mu is held. A
// failure is logged: the servers run all the same, and die with a killed
// agent, though what they started is then not found.
func (f *groupFile) write() {
	var b strings.Builder
	for _, pgid := range slices.Sorted(maps.Keys(f.groups)) {
		b.WriteString(groupLine(f.groups[pgid]))
	}
	if err := atomicfile.Write(f.path, []byte(b.String()), 0o600); err != nil {
		f.log.Warn("record the MCP servers' process groups", "err", err)
	}
}
