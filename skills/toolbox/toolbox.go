// Package toolbox assembles everything a node offers an LLM into one
// skills.Toolset from configuration: the tools of its skill directories,
// the built-in groups of a [builtin] table and the tools of its MCP
// servers. The edge agent uses it; the orchestrator can use it the same
// way.
//
// # Concurrency
//
// A Box is safe for concurrent use. Close is idempotent.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package toolbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/memory"
	"github.com/evoclaw/evoclaw/skills/internal/sshops"
	"github.com/evoclaw/evoclaw/skills/internal/webtools"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// Builtin is the [builtin] table of a node's configuration.
type Builtin struct {
	// Groups to offer: "coding" (read, write, edit, bash, glob,
	// apply_patch), "read-only" (read, grep, find, glob), "all" (every file
	// tool and bash), "remote" (read, write, edit, bash, grep, find on the
	// SSH host of Remote, without the local file groups), "git" (git_*),
	// "web" (webfetch, and websearch with Web.SearchURL), "memory"
	// (memory_write, memory_read) and "todo" (todowrite, todoread). Empty
	// offers none. Each tool is offered only when [skills] permissions
	// grant what it needs (docs/SKILLS.md).
	Groups []string `toml:"groups"`
	// Workspace is the directory the file and git tools cannot leave and
	// bash runs in; required with the file groups and git, absolute, must
	// exist. Skill tools with
	// sandboxing may write it too (and nothing else).
	Workspace string `toml:"workspace"`
	// Sandbox confines the bash tool: "auto" (default: bubblewrap when a
	// trial run at start works, else none with a warning), "bubblewrap",
	// "firejail" or "none". An explicit sandbox that is not installed or
	// does not work fails each bash call with execution_failed; it never
	// silently runs unconfined.
	Sandbox string `toml:"sandbox"`
	// Network lets sandboxed bash commands reach the network (default
	// false: a sandboxed command has none).
	Network bool `toml:"network"`
	// Remote is the SSH host of the "remote" group: its six tools work in
	// a directory of that host instead of the local workspace.
	Remote *Remote `toml:"remote"`
	// Web configures the web group: allowed hosts and networks, limits,
	// the search endpoint.
	Web webtools.Config `toml:"web"`
}

// Group names of this package beyond those of package builtin.
const (
	// GroupGit is git_status, git_diff, git_log, git_branch, git_commit.
	GroupGit = "git"
	// GroupWeb is webfetch and, with a search endpoint, websearch.
	GroupWeb = "web"
	// GroupMemory is memory_write and memory_read.
	GroupMemory = "memory"
	// GroupTodo is todowrite and todoread.
	GroupTodo = "todo"
)

// needsWorkspace reports a group that works in the local workspace.
func needsWorkspace(g string) bool {
	switch g {
	case builtin.GroupCoding, builtin.GroupReadOnly, builtin.GroupAll, GroupGit:
		return true
	}
	return false
}

// localFiles reports a group of local file tools, named like the remote
// group's.
func localFiles(g string) bool {
	return g == builtin.GroupCoding || g == builtin.GroupReadOnly || g == builtin.GroupAll
}

// Remote is the [builtin.remote] table: an SSH host for the remote group.
type Remote struct {
	// Addr is host:port of the SSH server.
	Addr string `toml:"addr"`
	// User is the remote account.
	User string `toml:"user"`
	// KeyFile is an unencrypted private key (OpenSSH or PEM) for User.
	KeyFile string `toml:"key_file"`
	// KnownHosts is an OpenSSH known_hosts file that must list the host's
	// key; there is no way to skip the check.
	KnownHosts string `toml:"known_hosts"`
	// Dir is the absolute remote workspace the tools cannot leave.
	Dir string `toml:"dir"`
}

// Resolve makes the relative paths of b (the workspace, the remote key_file
// and known_hosts) relative to dir, the directory of the file they were
// read from.
func (b *Builtin) Resolve(dir string) {
	b.Workspace = tomlconf.Resolve(dir, b.Workspace)
	if r := b.Remote; r != nil {
		r.KeyFile, r.KnownHosts = tomlconf.Resolve(dir, r.KeyFile), tomlconf.Resolve(dir, r.KnownHosts)
	}
}

// Validate fills defaults and returns every problem, each naming its key
// under prefix ("builtin").
func (b *Builtin) Validate(prefix string) []error {
	var errs []error
	for _, g := range b.Groups {
		switch g {
		case builtin.GroupCoding, builtin.GroupReadOnly, builtin.GroupAll, builtin.GroupRemote, GroupGit, GroupWeb, GroupMemory, GroupTodo:
		default:
			errs = append(errs, fmt.Errorf("%s.groups: unknown group %q, want coding, read-only, all, remote, git, web, memory or todo", prefix, g))
		}
	}
	remote := slices.Contains(b.Groups, builtin.GroupRemote)
	if slices.ContainsFunc(b.Groups, needsWorkspace) && !filepath.IsAbs(b.Workspace) {
		errs = append(errs, fmt.Errorf("%s.workspace: an absolute directory is required with %s.groups, got %q", prefix, prefix, b.Workspace))
	}
	if remote && slices.ContainsFunc(b.Groups, localFiles) {
		errs = append(errs, fmt.Errorf("%s.groups: %q offers the same six tool names as the local groups; use it alone", prefix, builtin.GroupRemote))
	}
	switch r := b.Remote; {
	case remote && r == nil:
		errs = append(errs, fmt.Errorf("%s.remote: required with group %q (addr, user, key_file, known_hosts, dir)", prefix, builtin.GroupRemote))
	case r != nil && !remote:
		errs = append(errs, fmt.Errorf("%s.remote: set, but %s.groups does not include %q", prefix, prefix, builtin.GroupRemote))
	case r != nil:
		for _, f := range []struct{ key, v string }{{"addr", r.Addr}, {"user", r.User}, {"key_file", r.KeyFile}, {"known_hosts", r.KnownHosts}} {
			if f.v == "" {
				errs = append(errs, fmt.Errorf("%s.remote.%s: required", prefix, f.key))
			}
		}
		if !path.IsAbs(r.Dir) {
			errs = append(errs, fmt.Errorf("%s.remote.dir: an absolute remote directory is required, got %q", prefix, r.Dir))
		}
	}
	errs = append(errs, b.Web.Validate(prefix+".web")...)
	switch b.Sandbox {
	case "":
		b.Sandbox = sandbox.Auto
	case sandbox.Auto, sandbox.None, sandbox.Bubblewrap, sandbox.Firejail:
	default:
		errs = append(errs, fmt.Errorf("%s.sandbox: %q, want auto, none, bubblewrap or firejail", prefix, b.Sandbox))
	}
	return errs
}

// Config is what a Box is built from. The zero value offers nothing.
type Config struct {
	// SkillDirs are searched for skill.toml as skills.LoadDir does.
	SkillDirs []string
	// Permissions granted; a tool is offered only with all of its own.
	Permissions []string
	// DataDir is the node's data directory; the memory and todo groups
	// keep their files there (memory.db, todos/). Required with them.
	// ConnectMCP records the stdio servers' process groups there
	// (MCPGroupFile); empty, it keeps no record.
	DataDir string
	// Builtin enables built-in groups.
	Builtin Builtin
	// MCPServers are connected by ConnectMCP.
	MCPServers map[string]mcptools.ServerConfig
	// DefaultTimeout and MaxTimeout bound tool runs; zero means the
	// defaults of package skills.
	DefaultTimeout, MaxTimeout time.Duration
	// LookPath finds sandbox programs; nil means exec.LookPath. Tests set
	// it to simulate a machine without them.
	LookPath func(file string) (string, error)
}

// Box is a node's toolset and the MCP sessions behind it.
type Box struct {
	// Tools lists and runs every offered tool.
	Tools *skills.Toolset

	cfg Config
	log *slog.Logger

	mu     sync.Mutex     // guards mcp, remote and memory
	mcp    *mcptools.Set  // nil until ConnectMCP
	remote *sshops.Client // nil until Connect, or without a remote group
	memory *memory.Store  // nil without the memory group
}

// New builds the toolset of cfg's skills and built-ins, logging broken
// skills and tools left out. When bash is offered it resolves the sandbox
// (see Builtin.Sandbox), running the sandbox once on a trivial command,
// and it warns about every tool that will run unconfined. log may be nil.
func New(cfg Config, log *slog.Logger) (*Box, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if errs := cfg.Builtin.Validate("builtin"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := checkWorkspace(cfg); err != nil {
		return nil, err
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
	box := &Box{Tools: ts, cfg: cfg, log: log}
	if err := box.addGroups(); err != nil {
		box.Close()
		return nil, err
	}
	for _, l := range ts.List() {
		switch {
		case l.ShadowedBy != "":
			log.Info("tool replaced by a built-in", "tool", l.Def.Name, "skill", l.Def.Evoclaw.Skill)
		case !l.Offered:
			log.Info("tool not offered: permissions not granted", "tool", l.Def.Name, "skill", l.Def.Evoclaw.Skill, "missing", l.Missing)
		}
	}
	warnUnconfined(ts, log)
	return box, nil
}

// Connect connects what needs the network: the MCP servers (ConnectMCP) and
// the remote group's SSH host. What fails is logged and left out, so the
// node still serves its other tools. Call it once, before serving; Close
// ends the sessions.
func (b *Box) Connect(ctx context.Context) {
	b.ConnectMCP(ctx)
	r := b.cfg.Builtin.Remote
	if r == nil {
		return
	}
	c, err := sshops.Dial(ctx, sshops.Config{Addr: r.Addr, User: r.User, KeyFile: r.KeyFile, KnownHosts: r.KnownHosts, Dir: r.Dir})
	if err != nil {
		b.log.Error("remote built-in tools not offered: SSH host not available", "addr", r.Addr, "err", err)
		return
	}
	tools, err := builtin.Group(builtin.GroupRemote, builtin.Options{Dir: r.Dir, Files: c.Files(), Exec: c.Exec(),
		BashTimeout: b.cfg.DefaultTimeout, MaxBashTimeout: b.cfg.MaxTimeout})
	if err == nil {
		err = b.Tools.Add(tools...)
	}
	if err != nil {
		c.Close()
		b.log.Error("add remote built-in tools", "err", err)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remote = c
}

// MCPGroupFile is the file in the data directory where the process
// groups of the running stdio MCP servers are recorded
// (mcptools.Options.GroupFile).
const MCPGroupFile = "mcp-groups"

// ConnectMCP connects to the configured MCP servers and adds their tools;
// a tool that fails is logged and left out, a server that fails is logged
// and started again in the background, its tools added when it lists them
// (mcptools.ConnectWith). Call it once, before
// serving; Close ends the sessions.
func (b *Box) ConnectMCP(ctx context.Context) {
	if len(b.cfg.MCPServers) == 0 {
		return
	}
	for name, s := range b.cfg.MCPServers {
		if s.Command != "" {
			b.log.Warn("MCP server runs UNCONFINED, with the agent's own rights (MCP servers are never sandboxed)",
				"server", name, "command", s.Command, "uid", os.Geteuid())
		}
	}
	o := mcptools.Options{Log: b.log, Changed: b.mcpChanged}
	if b.cfg.DataDir != "" {
		o.GroupFile = filepath.Join(b.cfg.DataDir, MCPGroupFile)
	}
	set, errs := mcptools.ConnectWith(ctx, b.cfg.MCPServers, o)
	for _, err := range errs {
		b.log.Warn("MCP server not available", "err", err)
	}
	tools, errs := set.Tools()
	for i, err := range errs {
		if i == maxToolErrLines {
			b.log.Warn("MCP tools not offered, more", "count", len(errs)-i)
			break
		}
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

// maxToolErrLines bounds the lines ConnectMCP writes about tools it does
// not offer: a server may list 512 tools no agent can offer.
const maxToolErrLines = 8

// mcpChanged offers the tools an MCP server offers since its restart or
// its last listing in place of those it offered before
// (mcptools.Options.Changed).
func (b *Box) mcpChanged(server string, tools []skills.GoTool, _ []error) {
	if err := b.Tools.Replace(skills.SourceMCP, server, tools...); err != nil {
		b.log.Error("replace MCP tools", "server", server, "err", err)
	}
	// mcptools logs the change and the tools it does not offer (how many,
	// the first reason), within its bound on such lines: a server may
	// change its tools every second and list hundreds it cannot offer
	// each time, and a line per tool was 500 lines a second.
}

// Close ends the MCP sessions; their tools then fail with
// execution_failed. It is idempotent.
func (b *Box) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	if b.mcp != nil {
		errs = append(errs, b.mcp.Close())
		b.mcp = nil
	}
	if b.remote != nil {
		errs = append(errs, b.remote.Close())
		b.remote = nil
	}
	if b.memory != nil {
		errs = append(errs, b.memory.Close())
		b.memory = nil
	}
	return errors.Join(errs...)
}
