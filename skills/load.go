package skills

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/BurntSushi/toml"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
)

// MaxFileSize is the largest skill.toml Load reads.
const MaxFileSize = 1 << 20

// Load reads and checks the skill.toml at path. Every error is a
// *LoadError naming the file, and where known the line and key.
func Load(path string) (Skill, error) {
	data, err := readFile(path)
	if err != nil {
		return Skill{}, &LoadError{File: path, Msg: err.Error(), Err: err}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return Skill{}, &LoadError{File: path, Msg: fmt.Sprintf("resolve skill directory: %v", err), Err: err}
	}
	return parse(path, dir, data)
}

// readFile reads at most MaxFileSize bytes of path.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read-only; a close error changes nothing
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d bytes", MaxFileSize)
	}
	return data, nil
}

// parse decodes and checks the contents of a skill.toml; file names it in
// errors and dir is the skill directory.
func parse(file, dir string, data []byte) (Skill, error) {
	if line := tomlconf.TooDeep(data); line > 0 {
		return Skill{}, &LoadError{File: file, Line: line, Msg: tomlconf.ErrTooDeep.Error()}
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Skill{}, &LoadError{File: file, Line: pe.Position.Line, Msg: pe.Message, Err: err}
		}
		return Skill{}, &LoadError{File: file, Msg: err.Error(), Err: err}
	}
	s, ke := buildSkill(doc)
	if ke != nil {
		return Skill{}, &LoadError{File: file, Line: locate(data, ke.at), Field: ke.at.String(), Msg: ke.msg}
	}
	s.Dir = dir
	for i := range s.Tools {
		s.Tools[i].Skill = s.Name
		s.Tools[i].Dir = dir
	}
	return s, nil
}

// LoadDir loads root/skill.toml, if present, and the skill.toml of every
// immediate subdirectory of root. A skill that fails to load is reported in
// the errors and left out; the others still load. So is a skill whose name,
// or one of whose tool names, an earlier skill already uses: directories
// are read in name order, which keeps the outcome deterministic. Skills are
// returned sorted by name.
func LoadDir(root string) ([]Skill, []error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, []error{fmt.Errorf("load skills from %s: %w", root, err)}
	}
	var errs []error
	dirs := []string{root}
	for _, e := range entries {
		d := filepath.Join(root, e.Name())
		if fi, err := os.Stat(d); err == nil && fi.IsDir() { // follows symlinked skill directories
			dirs = append(dirs, d)
		}
	}
	var files []string
	for _, d := range dirs {
		f := filepath.Join(d, FileName)
		fi, err := os.Stat(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// not a skill directory
		case err != nil:
			errs = append(errs, &LoadError{File: f, Msg: err.Error(), Err: err})
		case !fi.Mode().IsRegular():
			errs = append(errs, &LoadError{File: f, Msg: "not a regular file"})
		default:
			files = append(files, f)
		}
	}

	var skills []Skill
	skillFile := map[string]string{} // skill name → file that defined it
	toolSkill := map[string]string{} // tool name → skill that defined it
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := checkUnique(f, s, skillFile, toolSkill); err != nil {
			errs = append(errs, err)
			continue
		}
		skillFile[s.Name] = f
		for _, t := range s.Tools {
			toolSkill[t.Name] = s.Name
		}
		skills = append(skills, s)
	}
	slices.SortFunc(skills, func(a, b Skill) int { return cmp.Compare(a.Name, b.Name) })
	return skills, errs
}

// checkUnique fails when s reuses a skill or tool name already loaded. The
// LLM sees one flat list of tools, so a tool name must be unique across
// skills.
func checkUnique(file string, s Skill, skillFile, toolSkill map[string]string) error {
	if other, dup := skillFile[s.Name]; dup {
		return &LoadError{File: file, Field: "skill.name", Msg: fmt.Sprintf("skill %q is already defined in %s", s.Name, other), Err: ErrDuplicate}
	}
	for i, t := range s.Tools {
		if other, dup := toolSkill[t.Name]; dup {
			return &LoadError{File: file, Field: toolPath(i).child("name").String(), Msg: fmt.Sprintf("tool %q is already defined by skill %q", t.Name, other), Err: ErrDuplicate}
		}
	}
	return nil
}
