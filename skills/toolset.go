package skills

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// GoTool is a tool implemented in Go inside the agent: a built-in (read,
// bash, ...) or a proxy to a tool of an MCP server.
type GoTool struct {
	// Tool gives the name, description, parameters and permissions; its
	// Binary, Dir and Sandboxing are unused.
	Tool Tool
	// Schema, when set, is the JSON Schema of the parameters as the tool's
	// owner wrote it (MCP); Tool.Parameters is then ignored and arguments
	// are not validated here but by the owner.
	Schema map[string]any
	// Source is SourceBuiltin or SourceMCP; empty means SourceBuiltin.
	Source string
	// Run executes one call with arguments already validated.
	Run func(ctx context.Context, args map[string]any) Output
}

// Listing is one tool as an agent sees it: offered or not, and why not.
type Listing struct {
	// Def is the tool's definition.
	Def ToolDef
	// Offered reports that the agent offers and runs the tool.
	Offered bool
	// Missing lists the permissions the tool needs that are not granted.
	Missing []string
	// ShadowedBy is the source of a tool of the same name that replaces
	// this one (built-ins replace skill tools); empty when not replaced.
	ShadowedBy string
}

// Toolset is every tool an agent can offer: skill tools from a Catalog
// and Go tools (built-ins, MCP). A Go tool replaces a skill tool of the
// same name. Only tools whose permissions are all granted are offered.
//
// A Toolset is safe for concurrent use.
type Toolset struct {
	catalog *Catalog
	opts    ExecOptions

	mu  sync.RWMutex      // guards gos and added
	gos map[string]GoTool // by name
	// added counts the calls of Add (Generation).
	added uint64
}

// NewToolset returns a toolset over the skills of catalog (nil for none)
// that runs skill tools with opts; opts.Granted applies to every tool.
func NewToolset(catalog *Catalog, opts ExecOptions) *Toolset {
	return &Toolset{catalog: catalog, opts: opts, gos: map[string]GoTool{}}
}

// Add registers Go tools, replacing any of the same name. It fails,
// registering none, when a tool has an invalid name or no Run function.
func (s *Toolset) Add(tools ...GoTool) error {
	return s.Replace("", "", tools...)
}

// Replace removes the Go tools whose Source is source and whose
// Tool.Skill is skill, and registers tools as Add does, in one step: an
// MCP server's tools after its restart listed others. Empty source and
// skill remove nothing. It fails, changing nothing, as Add does.
func (s *Toolset) Replace(source, skill string, tools ...GoTool) error {
	for _, g := range tools {
		if !validName(g.Tool.Name) {
			return fmt.Errorf("add tool: %s", nameRule(g.Tool.Name))
		}
		if g.Run == nil {
			return fmt.Errorf("add tool %q: no Run function", g.Tool.Name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if source != "" || skill != "" {
		maps.DeleteFunc(s.gos, func(_ string, g GoTool) bool { return g.Source == source && g.Tool.Skill == skill })
	}
	for _, g := range tools {
		if g.Source == "" {
			g.Source = SourceBuiltin
		}
		s.gos[g.Tool.Name] = g
	}
	s.added++
	return nil
}

// Generation changes whenever what List returns may change: on every Add
// and Replace,
// and when the catalog reloads its skills (which it checks here, as List
// does). A caller that keeps what it built from Defs can serve it again
// for as long as Generation returns the same number.
func (s *Toolset) Generation() uint64 {
	s.mu.RLock()
	g := s.added
	s.mu.RUnlock()
	if s.catalog != nil {
		g += uint64(s.catalog.generation())
	}
	return g
}

// List returns every known tool, offered or not, sorted by name; a skill
// tool replaced by a Go tool appears after it with ShadowedBy set.
func (s *Toolset) List() []Listing {
	var out []Listing
	s.mu.RLock()
	for _, name := range slices.Sorted(maps.Keys(s.gos)) {
		g := s.gos[name]
		ok, missing := Allowed(g.Tool, s.opts.Granted)
		out = append(out, Listing{Def: g.def(), Offered: ok, Missing: missing})
	}
	s.mu.RUnlock()
	if s.catalog != nil {
		for _, d := range s.catalog.Defs() {
			ok, missing := Allowed(Tool{Permissions: d.Evoclaw.Permissions}, s.opts.Granted)
			l := Listing{Def: d, Offered: ok, Missing: missing}
			if g, shadowed := s.goTool(d.Name); shadowed {
				l.Offered, l.ShadowedBy = false, g.Source
			}
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(a, b Listing) int {
		switch {
		case a.Def.Name < b.Def.Name:
			return -1
		case a.Def.Name > b.Def.Name:
			return 1
		}
		return 0
	})
	return out
}

// Defs returns the definitions of the offered tools, sorted by name: what
// an LLM is told it may call.
func (s *Toolset) Defs() []ToolDef {
	var out []ToolDef
	for _, l := range s.List() {
		if l.Offered {
			out = append(out, l.Def)
		}
	}
	return out
}

// Names returns the names of the offered tools, sorted.
func (s *Toolset) Names() []string {
	var out []string
	for _, d := range s.Defs() {
		out = append(out, d.Name)
	}
	return out
}

// Offered reports whether Names holds name, without building the list: a
// caller about to run one tool checks it in one catalog lookup instead of
// cloning and sorting every definition.
func (s *Toolset) Offered(name string) bool {
	if g, ok := s.goTool(name); ok {
		ok, _ := Allowed(g.Tool, s.opts.Granted) // shadows a skill tool of the same name
		return ok
	}
	if s.catalog == nil {
		return false
	}
	t, ok := s.catalog.Tool(name)
	if !ok {
		return false
	}
	ok, _ = Allowed(Tool{Permissions: t.Permissions}, s.opts.Granted)
	return ok
}

// Call runs the tool called name with args and never returns a Go error:
// an unknown tool is not_found, a permission not granted is
// permission_denied, bad arguments are invalid_params, and the tool's own
// failures carry its error type. Text in the output is sanitized (see
// Sanitize) and Elapsed is set.
func (s *Toolset) Call(ctx context.Context, name string, args map[string]any) Output {
	return s.CallTimeout(ctx, name, args, 0)
}

// CallTimeout is Call with the caller's timeout for this call, in
// milliseconds (0 means the tool's own): it replaces a skill tool's
// timeout_ms and bounds a Go tool's context, in both cases clamped to the
// toolset's ExecOptions.MaxTimeout. A Go tool never runs longer than
// MaxTimeout, whatever its own limits.
func (s *Toolset) CallTimeout(ctx context.Context, name string, args map[string]any, timeoutMS int64) Output {
	start := time.Now()
	out := s.call(ctx, name, args, timeoutMS)
	for i, b := range out.Content {
		out.Content[i].Text = Sanitize(b.Text)
	}
	out.Stderr = Sanitize(out.Stderr)
	out.Elapsed = time.Since(start)
	return out
}

// CallJSON is Call with the arguments as a JSON object; empty or null is
// no arguments.
func (s *Toolset) CallJSON(ctx context.Context, name string, raw json.RawMessage) Output {
	return s.CallJSONTimeout(ctx, name, raw, 0)
}

// CallJSONTimeout is CallTimeout with the arguments as a JSON object.
func (s *Toolset) CallJSONTimeout(ctx context.Context, name string, raw json.RawMessage, timeoutMS int64) Output {
	var args map[string]any
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return Failed(wire.ErrInvalidParams, fmt.Sprintf("invalid parameters for %q: not a JSON object: %v", name, err))
		}
	}
	return s.CallTimeout(ctx, name, args, timeoutMS)
}

func (s *Toolset) call(ctx context.Context, name string, args map[string]any, timeoutMS int64) Output {
	if g, ok := s.goTool(name); ok {
		// A Go tool has its own limits (bash its timeout); the caller's
		// timeout, or else MaxTimeout, is the hard cap on top.
		limit := cmpOr(s.opts.MaxTimeout, DefaultMaxTimeout)
		if timeoutMS > 0 && timeoutMS < int64(limit/time.Millisecond) {
			limit = time.Duration(timeoutMS) * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		return s.runGo(ctx, g, args)
	}
	if s.catalog != nil {
		if t, ok := s.catalog.Tool(name); ok {
			if timeoutMS > 0 {
				t.TimeoutMS = timeoutMS // Execute clamps it to MaxTimeout
			}
			return Execute(ctx, t, args, s.opts)
		}
	}
	return Failed(wire.ErrNotFound, fmt.Sprintf("Tool '%s' not found. Available tools: %s.", name, listOrNone(s.Names())))
}

// runGo checks and runs a Go tool; a panic in it becomes an internal error
// rather than taking the agent down.
func (s *Toolset) runGo(ctx context.Context, g GoTool, args map[string]any) (out Output) {
	if ok, missing := Allowed(g.Tool, s.opts.Granted); !ok {
		return Denied(g.Tool.Name, missing)
	}
	if g.Schema == nil {
		if err := g.Tool.Validate(args); err != nil {
			return Failed(wire.ErrInvalidParams, err.Error())
		}
		args = g.Tool.WithDefaults(args)
	}
	defer func() {
		if r := recover(); r != nil {
			out = Failed(wire.ErrInternal, fmt.Sprintf("tool %q crashed: %v", g.Tool.Name, r))
		}
	}()
	return g.Run(ctx, args)
}

// Lookup returns the listing of the tool called name as the agent would
// run it (a Go tool before a skill tool it replaces), offered or not.
func (s *Toolset) Lookup(name string) (Listing, bool) {
	if g, ok := s.goTool(name); ok {
		ok, missing := Allowed(g.Tool, s.opts.Granted)
		return Listing{Def: g.def(), Offered: ok, Missing: missing}, true
	}
	if s.catalog != nil {
		if t, ok := s.catalog.Tool(name); ok {
			ok, missing := Allowed(t, s.opts.Granted)
			return Listing{Def: t.Def(), Offered: ok, Missing: missing}, true
		}
	}
	return Listing{}, false
}

// Denied returns the permission_denied answer for a call of name when the
// toolset knows the tool but does not offer it for lack of permissions,
// else nil.
func (s *Toolset) Denied(name string) *Output {
	l, ok := s.Lookup(name)
	if !ok || l.Offered {
		return nil
	}
	out := Denied(name, l.Missing)
	return &out
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (s *Toolset) goTool(name string) (GoTool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.gos[name]
	return g, ok
}

// def builds the definition of a Go tool.
func (g GoTool) def() ToolDef {
	d := g.Tool.def(g.Source, "")
	if g.Schema != nil {
		d.Parameters, _ = cloneValue(g.Schema).(map[string]any)
	}
	return d
}
