package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Catalog is the skills of a list of directories, loaded once and loaded
// again only when a skill.toml is added, removed or changed (by
// modification time or size). Tool definitions are built once per load.
// On Linux an inotify watch on the directories and skill files tells an
// unchanged catalog apart without listing and stating them on every
// lookup; elsewhere, or when a directory cannot be watched, every lookup
// scans.
//
// Directories are searched in order, each as LoadDir does; a skill or tool
// name already defined by an earlier directory is reported as ErrDuplicate
// and left out.
type Catalog struct {
	dirs []string

	mu     sync.Mutex           // guards the fields below
	stamps map[string]fileStamp // skill.toml path → stamp at the last load
	loaded bool
	skills []Skill
	errs   []error
	defs   map[string]ToolDef // tool name → definition, built at load
	tools  map[string]Tool    // tool name → tool
	loads  int
	scans  int // directory scans, for tests
	// watch, when not nil, was armed before the last scan and says
	// whether anything may have changed since: an unchanged catalog is
	// then served without scanning (watch_linux.go).
	watch dirWatch
}

// dirWatch tells whether the files under a catalog's directories may have
// changed since it was armed.
type dirWatch interface {
	changed() bool
	close()
}

// fileStamp is what tells a changed skill.toml apart.
type fileStamp struct {
	mtime time.Time
	size  int64
}

// NewCatalog returns a catalog of the skills in dirs. Nothing is read
// until the first call.
func NewCatalog(dirs ...string) *Catalog {
	return &Catalog{dirs: slices.Clone(dirs)}
}

// Skills returns the loaded skills, sorted by name within each directory,
// and the errors of those that did not load. It reloads when any skill
// file changed since the last call.
func (c *Catalog) Skills() ([]Skill, []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked()
	return slices.Clone(c.skills), slices.Clone(c.errs)
}

// Tool returns the tool called name, reloading first if a file changed.
func (c *Catalog) Tool(name string) (Tool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked()
	t, ok := c.tools[name]
	return t, ok
}

// Defs returns the definition of every loaded tool, sorted by name, each a
// fresh copy.
func (c *Catalog) Defs() []ToolDef {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked()
	out := make([]ToolDef, 0, len(c.defs))
	for _, name := range slices.Sorted(maps.Keys(c.defs)) {
		out = append(out, c.defs[name].clone())
	}
	return out
}

// generation is Loads after a check for changed skill files.
func (c *Catalog) generation() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked()
	return c.loads
}

// Loads counts how many times the catalog read its skill files; it lets
// tests and metrics see that an unchanged catalog is served from memory.
func (c *Catalog) Loads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// refreshLocked reloads when the skill files differ from the last load.
func (c *Catalog) refreshLocked() {
	if c.loaded && c.watch != nil && !c.watch.changed() {
		return
	}
	if c.watch != nil {
		c.watch.close()
	}
	c.watch = newWatch(c.dirs) // before the scan: a change during it is seen next time
	stamps := c.scan()
	if c.loaded && maps.Equal(stamps, c.stamps) {
		return
	}
	c.loaded, c.stamps, c.loads = true, stamps, c.loads+1
	c.skills, c.errs = nil, nil
	c.defs, c.tools = map[string]ToolDef{}, map[string]Tool{}
	skillDir := map[string]string{}
	for _, dir := range c.dirs {
		loaded, errs := LoadDir(dir)
		c.errs = append(c.errs, errs...)
		for _, s := range loaded {
			if err := c.conflict(s, skillDir); err != nil {
				c.errs = append(c.errs, err)
				continue
			}
			skillDir[s.Name] = s.Dir
			for _, t := range s.Tools {
				c.tools[t.Name] = t
				c.defs[t.Name] = t.def(SourceSkill, s.Version)
			}
			c.skills = append(c.skills, s)
		}
	}
}

// conflict reports a skill or tool name an earlier directory defined.
func (c *Catalog) conflict(s Skill, skillDir map[string]string) error {
	file := filepath.Join(s.Dir, FileName)
	if other, dup := skillDir[s.Name]; dup {
		return &LoadError{File: file, Field: "skill.name", Msg: fmt.Sprintf("skill %q is already defined in %s", s.Name, other), Err: ErrDuplicate}
	}
	for i, t := range s.Tools {
		if prev, dup := c.tools[t.Name]; dup {
			return &LoadError{File: file, Field: toolPath(i).child("name").String(), Msg: fmt.Sprintf("tool %q is already defined by skill %q", t.Name, prev.Skill), Err: ErrDuplicate}
		}
	}
	return nil
}

// scan stats every skill.toml LoadDir would read. A directory that cannot
// be listed is left out and reported by LoadDir itself.
func (c *Catalog) scan() map[string]fileStamp {
	c.scans++
	stamps := map[string]fileStamp{}
	for _, root := range c.dirs {
		cands := []string{filepath.Join(root, FileName)}
		if entries, err := os.ReadDir(root); err == nil {
			for _, e := range entries {
				cands = append(cands, filepath.Join(root, e.Name(), FileName))
			}
		} else {
			stamps[root] = fileStamp{size: -1} // a missing root appearing later is a change
		}
		for _, f := range cands {
			fi, err := os.Stat(f)
			switch {
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			case err != nil:
				stamps[f] = fileStamp{size: -2}
			default:
				stamps[f] = fileStamp{mtime: fi.ModTime(), size: fi.Size()}
			}
		}
	}
	return stamps
}
