// Package toolbox assembles everything a node offers an LLM into one
// skills.Toolset from configuration: the tools of its skill directories,
// the built-in groups of a [builtin] table and the tools of its MCP
// servers. The edge agent uses it; the orchestrator can use it the same
// way.
//
// # Concurrency
//
// A Box is safe for concurrent use. Close is idempotent.
package toolbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// Builtin is the [builtin] table of a node's configuration.
type Builtin struct {
	// Groups to offer: "coding" (read, write, edit, bash), "read-only"
	// (read, grep, find) or "all". Empty offers none.
	Groups []string `toml:"groups"`
	// Workspace is the directory the file tools cannot leave and bash runs
	// in; required with Groups, absolute, must exist. Skill tools with
	// sandboxing may write it too (and nothing else).
	Workspace string `toml:"workspace"`
	// Sandbox confines the bash tool: "none" (default), "bubblewrap" or
	// "firejail". A sandbox that is not installed fails each bash call
	// with execution_failed; it never silently runs unconfined.
	Sandbox string `toml:"sandbox"`
	// Network lets sandboxed bash commands reach the network (default
	// false: a sandboxed command has none).
	Network bool `toml:"network"`
}

// Validate fills defaults and returns every problem, each naming its key
// under prefix ("builtin").
func (b *Builtin) Validate(prefix string) []error {
	var errs []error
	for _, g := range b.Groups {
		switch g {
		case builtin.GroupCoding, builtin.GroupReadOnly, builtin.GroupAll:
		default:
			errs = append(errs, fmt.Errorf("%s.groups: unknown group %q, want coding, read-only or all", prefix, g))
		}
	}
	if len(b.Groups) > 0 && !filepath.IsAbs(b.Workspace) {
		errs = append(errs, fmt.Errorf("%s.workspace: an absolute directory is required with %s.groups, got %q", prefix, prefix, b.Workspace))
	}
	switch b.Sandbox {
	case "":
		b.Sandbox = sandbox.None
	case sandbox.None, sandbox.Bubblewrap, sandbox.Firejail:
	default:
		errs = append(errs, fmt.Errorf("%s.sandbox: %q, want none, bubblewrap or firejail", prefix, b.Sandbox))
	}
	return errs
}

// Config is what a Box is built from. The zero value offers nothing.
type Config struct {
	// SkillDirs are searched for skill.toml as skills.LoadDir does.
	SkillDirs []string
	// Permissions granted; a tool is offered only with all of its own.
	Permissions []string
	// Builtin enables built-in groups.
	Builtin Builtin
	// MCPServers are connected by ConnectMCP.
	MCPServers map[string]mcptools.ServerConfig
	// DefaultTimeout and MaxTimeout bound tool runs; zero means the
	// defaults of package skills.
	DefaultTimeout, MaxTimeout time.Duration
}

// Box is a node's toolset and the MCP sessions behind it.
type Box struct {
	// Tools lists and runs every offered tool.
	Tools *skills.Toolset

	cfg Config
	log *slog.Logger

	mu  sync.Mutex    // guards mcp
	mcp *mcptools.Set // nil until ConnectMCP
}

// New builds the toolset of cfg's skills and built-ins, logging broken
// skills and tools left out; it starts no process. log may be nil.
func New(cfg Config, log *slog.Logger) (*Box, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if errs := cfg.Builtin.Validate("builtin"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cat := skills.NewCatalog(cfg.SkillDirs...)
	_, errs := cat.Skills()
	for _, err := range errs {
		log.Warn("skipping broken skill", "err", err)
	}
	ts := skills.NewToolset(cat, skills.ExecOptions{
		DefaultTimeout: cfg.DefaultTimeout,
		MaxTimeout:     cfg.MaxTimeout,
		Granted:        cfg.Permissions,
		Workspace:      cfg.Builtin.Workspace,
	})
	if b := cfg.Builtin; len(b.Groups) > 0 {
		if fi, err := os.Stat(b.Workspace); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("builtin.workspace %s is not a directory: %v", b.Workspace, err)
		}
		o := builtin.Options{Dir: b.Workspace, Sandbox: b.Sandbox, Network: b.Network, BashTimeout: cfg.DefaultTimeout, MaxBashTimeout: cfg.MaxTimeout}
		for _, g := range b.Groups {
			tools, err := builtin.Group(g, o)
			if err != nil {
				return nil, err
			}
			if err := ts.Add(tools...); err != nil {
				return nil, err
			}
		}
	}
	for _, l := range ts.List() {
		switch {
		case l.ShadowedBy != "":
			log.Info("tool replaced by a built-in", "tool", l.Def.Name, "skill", l.Def.Evoclaw.Skill)
		case !l.Offered:
			log.Info("tool not offered: permissions not granted", "tool", l.Def.Name, "skill", l.Def.Evoclaw.Skill, "missing", l.Missing)
		}
	}
	return &Box{Tools: ts, cfg: cfg, log: log}, nil
}

// ConnectMCP connects to the configured MCP servers and adds their tools;
// a server or tool that fails is logged and left out. Call it once, before
// serving; Close ends the sessions.
func (b *Box) ConnectMCP(ctx context.Context) {
	if len(b.cfg.MCPServers) == 0 {
		return
	}
	set, errs := mcptools.Connect(ctx, b.cfg.MCPServers, b.log)
	for _, err := range errs {
		b.log.Warn("MCP server not available", "err", err)
	}
	tools, errs := set.Tools()
	for _, err := range errs {
		b.log.Warn("MCP tool not offered", "err", err)
	}
	if err := b.Tools.Add(tools...); err != nil {
		b.log.Error("add MCP tools", "err", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mcp != nil {
		b.mcp.Close() // a second call replaces the first set
	}
	b.mcp = set
}

// Close ends the MCP sessions; their tools then fail with
// execution_failed. It is idempotent.
func (b *Box) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mcp == nil {
		return nil
	}
	err := b.mcp.Close()
	b.mcp = nil
	return err
}
